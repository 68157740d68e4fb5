// bench/scheduler: tl-sim's policies on the pollux and easyscale presets across a sweep of
// rescale costs, the simulation time of the large preset, and plots. --sweep: the policies
// against offered load instead (scheduler_sweep.cpp). Every ratio is against
// runs of the same invocation: mean JCT of yarn-cs (the capacity scheduler) and of las (the
// strong non-elastic baseline) over the policy's.
//
// Rescale costs: 0 s, tl's in-place pause and checkpoint-restart (given by flags, measured by
// bench_inplace_rescale on the machine at hand; the defaults are what it printed here, see
// docs/design.md), 20 s and 60 s.
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "bench/scheduler_sweep.h"
#include "common/check.h"
#include "common/cli/cli.h"
#include "common/files.h"
#include "tools/sched/sim/generator.h"
#include "tools/sched/sim/report.h"

namespace {

using namespace tl::sched;

int runBench(int argc, char** argv) {
  double inplace = 0.3, restart = 8.8;
  int64_t seed = 1;
  std::string out = "bench-scheduler";
  bool sweep = false, noLarge = false;
  int seeds = 3;
  auto app = tl::cli::makeApp("bench_scheduler", "tl-sim's policies: presets x rescale costs");
  tl::cli::addDouble(*app, "--inplace-pause", &inplace, "tl's in-place rescale pause (s)", 0);
  tl::cli::addDouble(*app, "--restart-pause", &restart, "tl's checkpoint-restart pause (s)", 0);
  tl::cli::addInt(*app, "--seed", &seed, "generator seed", 0);
  app->add_option("--out", out, "folder for the plots and CSVs")->capture_default_str();
  app->add_flag(
      "--sweep", sweep,
      "instead: every policy at offered loads 0.5..2.0 (load_sweep.csv, load_sweep_*.png)");
  tl::cli::addInt(*app, "--seeds", &seeds, "with --sweep: seeds per point", 1, 100);
  app->add_flag("--no-large", noLarge, "with --sweep: skip the large preset");
  if (!tl::cli::parse(*app, argc, argv)) return 0;
  tl::ensureWritableDir(out);
  if (sweep) {
    tl::bench::runLoadSweep({inplace, restart, seeds, 1.3, !noLarge, out});
    return 0;
  }
  const ProfileSet profiles = ProfileSet::builtin();
  const std::vector<std::pair<std::string, double>> costs{
      {"0", 0}, {"in-place", inplace}, {"ckpt-restart", restart}, {"20 s", 20}, {"60 s", 60}};

  std::printf("%-10s %-17s %-15s %10s %10s %10s %6s %9s %9s %9s\n", "preset", "rescale cost",
              "policy", "mean JCT", "median", "p99 JCT", "util", "resc/job", "yarn/this",
              "las/this");
  for (const std::string name : {"pollux", "easyscale"}) {
    Preset p = preset(name);
    p.generator.seed = uint64_t(seed);
    const auto trace = generateTrace(p.generator, profiles);
    const ThroughputModel model(p.cluster, profiles);
    for (const auto& [label, cost] : costs) {
      std::vector<SimResult> results;
      results.reserve(policyNames().size());
      std::map<std::string, double> mean;
      for (const auto& policyName : policyNames()) {
        auto policy = makePolicy(policyName, model, {cost});
        results.push_back(simulate(trace, model, *policy, {cost}));
        mean[policyName] = results.back().summary.meanJct;
      }
      for (const auto& r : results) {
        const auto& s = r.summary;
        std::printf("%-10s %-17s %-15s %9.0fs %9.0fs %9.0fs %5.1f%% %9.2f %8.2fx %8.2fx\n",
                    name.c_str(), (label + (cost > 0 && label != "20 s" && label != "60 s"
                                                ? " " + tl::str(cost) + "s"
                                                : ""))
                                      .c_str(),
                    s.policy.c_str(), s.meanJct, s.medianJct, s.p99Jct, 100 * s.utilisation,
                    s.rescalesPerJob, mean["yarn-cs"] / s.meanJct, mean["las"] / s.meanJct);
      }
      if (cost == inplace) {
        std::vector<PolicyRun> runs;
        for (size_t i = 0; i < results.size(); ++i) runs.push_back({policyNames()[i], &results[i]});
        const std::string base = tl::joinPath(out, name);
        tl::writeFileAtomic(base + "_jct_cdf.png", jctCdfPng(runs));
        tl::writeFileAtomic(base + "_allocation.png", allocationPng(runs, p.cluster.totalGpus()));
        tl::writeFileAtomic(base + "_mean_jct.png", meanJctBarsPng(runs));
      }
    }
  }

  // The large preset: time to simulate each policy (target: <= 10 s each on this machine).
  Preset large = preset("large");
  large.generator.seed = uint64_t(seed);
  const auto t0 = std::chrono::steady_clock::now();
  const auto trace = generateTrace(large.generator, profiles);
  const double generateSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ThroughputModel model(large.cluster, profiles);
  std::printf("\nlarge preset: %zu jobs on %d GPUs, generated in %.2f s, rescale cost %.1f s\n",
              trace.size(), large.cluster.totalGpus(), generateSeconds, inplace);
  std::printf("%-15s %12s %10s %10s %10s %12s\n", "policy", "simulated in", "decisions",
              "mean JCT", "yarn/this", "target 10 s");
  double yarnMean = 0;
  for (const auto& policyName : policyNames()) {
    auto policy = makePolicy(policyName, model, {inplace});
    const auto t = std::chrono::steady_clock::now();
    const auto r = simulate(trace, model, *policy, {inplace});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    if (policyName == "yarn-cs") yarnMean = r.summary.meanJct;
    std::printf("%-15s %11.2fs %10d %9.0fs %9.2fx %12s\n", policyName.c_str(), seconds, r.decisions,
                r.summary.meanJct, yarnMean / r.summary.meanJct, seconds <= 10 ? "met" : "MISSED");
  }
  std::printf("\nplots: %s/{pollux,easyscale}_{jct_cdf,allocation,mean_jct}.png (in-place cost)\n",
              out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tl::cli::run("bench_scheduler", [&] { return runBench(argc, argv); }); }
