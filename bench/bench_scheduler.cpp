// bench/scheduler: tl-sim's policies on the pollux and easyscale presets across a sweep of
// rescale costs, the simulation time of the large preset, and plots. --sweep: tl's policy
// against the best baseline over offered load instead (scheduler_sweep.cpp). Every ratio is against
// runs of the same invocation: mean JCT of yarn-cs (the capacity scheduler) and of las (the
// strong non-elastic baseline) over the policy's.
//
// Rescale costs: 0 s, tl's in-place pause and checkpoint-restart (given by flags, measured by
// bench_inplace_rescale on the machine at hand; the defaults are what it printed here, see
// docs/design/scheduling-simulator.md), 20 s and 60 s.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
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
  bool sweep = false;
  tl::bench::SweepOptions sweepOptions;
  std::string loads, largeLoads, presets, replot;
  auto app = tl::cli::makeApp("bench_scheduler", "tl-sim's policies: presets x rescale costs");
  tl::cli::addDouble(*app, "--inplace-pause", &inplace, "tl's in-place rescale pause (s)", 0);
  tl::cli::addDouble(*app, "--restart-pause", &restart, "tl's checkpoint-restart pause (s)", 0);
  tl::cli::addInt(*app, "--seed", &seed, "generator seed", 0);
  app->add_option("--out", out, "folder for the plots and CSVs")->capture_default_str();
  app->add_flag("--sweep", sweep,
                "instead: hetero-goodput against every baseline at offered loads 0.5..2.0 "
                "(load_sweep*.csv, load_sweep_*.png)");
  int seeds = sweepOptions.seeds, largeSeeds = sweepOptions.largeSeeds;
  int firstSeed = sweepOptions.firstSeed;
  tl::cli::addInt(*app, "--seeds", &seeds, "with --sweep: seeds per point (pollux, easyscale)", 1,
                  100);
  tl::cli::addInt(*app, "--large-seeds", &largeSeeds, "with --sweep: seeds per point on large", 1,
                  100);
  tl::cli::addInt(*app, "--first-seed", &firstSeed,
                  "with --sweep: seeds count from this one (adds seeds to an earlier sweep)", 1,
                  1000000);
  app->add_option("--replot", replot,
                  "instead: redraw the sweep's plots into --out from DIR/load_sweep.csv and "
                  "DIR/load_sweep_verdict.csv (e.g. rows merged from several sweeps)");
  app->add_option("--loads", loads, "with --sweep: offered loads, comma-separated (default "
                                    "0.5,0.8,1.0,1.3,1.6,2.0)");
  app->add_option("--large-loads", largeLoads,
                  "with --sweep: loads for the large preset (default: as --loads)");
  app->add_option("--presets", presets,
                  "with --sweep: presets, comma-separated (default pollux,easyscale,large)");
  if (!tl::cli::parse(*app, argc, argv)) return 0;
  tl::ensureWritableDir(out);
  if (!replot.empty()) {
    TL_REQUIRE(!sweep, "--replot: not with --sweep (it redraws what a sweep wrote)");
    tl::bench::plotLoadSweep(replot, out);
    std::printf("wrote %s/load_sweep_{verdict,queueing}.png\n", out.c_str());
    return 0;
  }
  if (sweep) {
    const auto list = [](const std::string& flag, const std::string& text) {
      std::string s = text;
      for (char& c : s) c = c == ',' ? ' ' : c;
      auto items = tl::cli::splitBlanks(s);
      TL_REQUIRE(!items.empty(), flag, ": empty list");
      return items;
    };
    const auto numbers = [&](const std::string& flag, const std::string& text) {
      std::vector<double> v;
      for (const auto& item : list(flag, text)) {
        char* end = nullptr;
        const double x = std::strtod(item.c_str(), &end);
        TL_REQUIRE(end && *end == 0 && x >= 0.01 && x <= 100, flag, ": '", item,
                   "' is not a load in [0.01, 100]");
        v.push_back(x);
      }
      return v;
    };
    sweepOptions.inplace = inplace;
    sweepOptions.seeds = int(seeds);
    sweepOptions.largeSeeds = int(largeSeeds);
    sweepOptions.firstSeed = int(firstSeed);
    if (!loads.empty()) sweepOptions.loads = sweepOptions.largeLoads = numbers("--loads", loads);
    if (!largeLoads.empty()) sweepOptions.largeLoads = numbers("--large-loads", largeLoads);
    if (!presets.empty()) {
      sweepOptions.presets = list("--presets", presets);
      for (const auto& p : sweepOptions.presets)
        TL_REQUIRE(std::count(presetNames().begin(), presetNames().end(), p) == 1,
                   "--presets: unknown preset '", p, "' (known: pollux, easyscale, large)");
    }
    sweepOptions.out = out;
    tl::bench::runLoadSweep(sweepOptions);
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

  // The large preset: time to simulate each policy, and the five the issue names together
  // (yarn-cs, las, elastic-hetero, goodput, hetero-goodput; target: <= 15 s on this machine).
  Preset large = preset("large");
  large.generator.seed = uint64_t(seed);
  const auto t0 = std::chrono::steady_clock::now();
  const auto trace = generateTrace(large.generator, profiles);
  const double generateSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ThroughputModel model(large.cluster, profiles);
  std::printf("\nlarge preset: %zu jobs on %d GPUs, generated in %.2f s, rescale cost %.1f s\n",
              trace.size(), large.cluster.totalGpus(), generateSeconds, inplace);
  std::printf("%-15s %12s %10s %10s %10s %10s\n", "policy", "simulated in", "CPU", "decisions",
              "mean JCT", "yarn/this");
  double yarnMean = 0, five = 0, all = 0, fiveCpu = 0;
  for (const auto& policyName : policyNames()) {
    auto policy = makePolicy(policyName, model, {inplace});
    const auto t = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();
    const auto r = simulate(trace, model, *policy, {inplace});
    const double cpu = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    if (policyName == "yarn-cs") yarnMean = r.summary.meanJct;
    all += seconds;
    if (policyName != "elastic") five += seconds, fiveCpu += cpu;
    std::printf("%-15s %11.2fs %9.2fs %10d %9.0fs %9.2fx\n", policyName.c_str(), seconds, cpu,
                r.decisions, r.summary.meanJct, yarnMean / r.summary.meanJct);
  }
  // Wall time is what a user waits; CPU time shows what a busy machine adds to it.
  std::printf("large: yarn-cs, las, elastic-hetero, goodput, hetero-goodput in %.1f s wall, "
              "%.1f s CPU (target 15 s: %s); all %zu policies in %.1f s wall\n",
              five, fiveCpu, five <= 15 ? "met" : "MISSED", policyNames().size(), all);
  std::printf("\nplots: %s/{pollux,easyscale}_{jct_cdf,allocation,mean_jct}.png (in-place cost)\n",
              out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tl::cli::run("bench_scheduler", [&] { return runBench(argc, argv); }); }
