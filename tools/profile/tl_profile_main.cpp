// tl-profile: short bursts of one job over a sweep of loader workers, a fitted throughput
// model, and the worker count to use.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "common/check.h"
#include "common/files.h"
#include "common/cli/cli.h"
#include "tools/profile/burst.h"
#include "tools/profile/profile_2d.h"
#include "tools/profile/profile_report.h"
#include "tools/submit/child_process.h"
#include "tools/submit/dispatcher.h"
#include "tools/submit/launch_check.h"
#include "tools/submit/mpirun_command.h"

namespace {

constexpr const char* kProgram = "tl-profile";

constexpr const char* kSummary =
    "Profiles one job's throughput against its loader workers.\n"
    "Run as: tl-profile [flags] --out DIR -- <tl-launch flags of the job>\n"
    "e.g.    tl-profile --workers-sweep 0,1,2,4 --max-iterations 30 --out prof -- \\\n"
    "            --model cnn --dataset cifar10 --data-dir D --batch 64\n"
    "\n"
    "For each w of the sweep it runs `[taskset -c CPUS] mpirun -np P tl-launch <job flags>\n"
    "--steps N --workers w --output-dir DIR/burst_w` (log: DIR/burst_w/job.log) and measures\n"
    "images/s and the share of time spent waiting for data, leaving out the first\n"
    "--warmup-steps steps (from the step records' times in metrics.jsonl; with too few steps,\n"
    "from summary.json as a whole). It fits rate(w) = min(C, w / (a*w + b)): from the loader\n"
    "measurements in summary.json (\"loader\", \"compute_s\") when present, else from images/s\n"
    "alone (C: best rate with under 5% data wait; t(w) = w / rate(w) = a*w + b by least\n"
    "squares over the loader-bound bursts). It prints a table, recommends the smallest w\n"
    "within --tolerance of the best predicted throughput, and writes DIR/profile.csv,\n"
    "DIR/profile.json and DIR/profile.png (throughput against workers: measured points, model\n"
    "curve, recommendation).\n"
    "\n"
    "With --cache-mb M (an image-folder job) the profile has a second dimension, the dataset\n"
    "cache budget: the sweep runs at --cache-mb M, the memory dimension is derived from the\n"
    "bursts' cache figures (miss share, storage speed; metrics.jsonl) and measured by check\n"
    "bursts at --cache-check points; DIR/profile_2d.csv/json/png hold the grid, and the\n"
    "smallest (workers, cache) within --tolerance of the best is recommended. Its bursts are\n"
    "measured warm: their rate leaves out the first epoch (all first reads) when they run past\n"
    "it; the output says which figures are warm and which cold.";

void checkJobFlags(const std::vector<std::string>& jobFlags, bool twoDimensions) {
  TL_REQUIRE(!jobFlags.empty(),
             "no job: give its tl-launch flags after --, e.g. -- --model cnn --batch 64");
  for (const auto& flag : jobFlags) {
    std::string name = flag.substr(0, flag.find('='));
    TL_REQUIRE(!twoDimensions || name != "--cache-mb",
               "job flag --cache-mb: tl-profile --cache-mb sets it for every burst");
    const auto& owned = tl::profile::burstOwnedFlags();
    TL_REQUIRE(
        std::find(owned.begin(), owned.end(), name) == owned.end(), "job flag ", name,
        ": tl-profile sets it for every burst (use --max-iterations, --workers-sweep, --out)");
  }
}

// The memory dimension: the cache figures of the sweep's largest successful burst, the grid,
// and the check bursts (each with the job's flags but its own --cache-mb).
int runCacheDimension(const tl::profile::BurstSpec& sweepSpec, const tl::profile::ProfileResult& sweep,
                      const std::string& out, double cacheMb, const std::vector<double>& grid,
                      std::vector<tl::profile::CacheCheck> checks) {
  using namespace tl;
  const profile::BurstMeasurement* largest = nullptr;
  for (const auto& b : sweep.bursts) {
    if (b.ok() && (!largest || b.workers > largest->workers)) largest = &b;
  }
  if (!largest) return cli::kExitOk;  // nothing measured; the 1-D report said so
  const auto dimension = profile::readCacheDimension(
      joinPath(out, "burst_" + std::to_string(largest->workers)),
      sweep.fit.source == "loader measurements" ? profile::FittedReads::WholeBurst
                                                : profile::FittedReads::SteadyWindow,
      largest->warm);
  if (dimension.measured && dimension.warm &&
      std::abs(dimension.cache.fittedMissShare - dimension.steadyMissShare) > 0.01) {
    std::printf(
        "%s: the worker table above models the sweep at the miss share of the reads it "
        "was fitted on (%.1f%%), while its measured rates are warm (%.1f%% misses): "
        "compare them in the grid below, which is the steady state.\n",
        kProgram, 100 * dimension.cache.fittedMissShare, 100 * dimension.steadyMissShare);
  }
  if (dimension.measured && !dimension.warm) {
    std::printf(
        "%s: the bursts measured the cache COLD: %d steps (%d left out as warm-up) ended "
        "within the first epoch, so no sample was read twice; the steady state is derived "
        "from the cache model only. To measure it warm, give --max-iterations above one "
        "epoch's steps plus a few.\n",
        kProgram, sweepSpec.steps, sweepSpec.warmupSteps);
  }
  profile::CacheReport report = profile::buildCacheReport(sweep, dimension, cacheMb, grid);
  if (checks.empty() && sweep.recommended >= 0) {
    const int w = std::max(1, sweep.recommended);
    checks = {{w, 0}, {w, cacheMb / 2}};
  }
  for (const auto& check : checks) {
    profile::BurstSpec spec = sweepSpec;
    spec.jobFlags.back() = profile::cacheFlagValue(check.cacheMb);  // the value after --cache-mb
    const std::string folder = joinPath(out, "check_w" + std::to_string(check.workers) + "_cache" +
                                                 profile::cacheLabel(check.cacheMb));
    std::printf("%s: check burst with %d loader worker(s), --cache-mb %s -> %s\n", kProgram,
                check.workers, profile::cacheFlagValue(check.cacheMb).c_str(), folder.c_str());
    std::fflush(stdout);
    const profile::BurstMeasurement m = profile::runBurst(spec, check.workers, folder);
    if (!m.ok()) std::printf("%s: check burst failed: %s\n", kProgram, m.note.c_str());
    profile::addCheck(report, check.workers, check.cacheMb, m.ok() ? m.imagesPerSecond : -1,
                      m.warm);
    if (submit::interruptsReceived() > 0) {
      std::fprintf(stderr, "%s: interrupted; no 2-D profile written\n", kProgram);
      return cli::kExitInterrupted;
    }
  }
  profile::writeCacheFiles(report, out);
  std::printf("\n%s", profile::cacheTable(report).c_str());
  std::printf("wrote %s, %s%s\n", joinPath(out, "profile_2d.csv").c_str(),
              joinPath(out, "profile_2d.json").c_str(),
              report.cells.empty() ? "" : (", " + joinPath(out, "profile_2d.png")).c_str());
  return cli::kExitOk;
}

int runProfile(int argc, char** argv) {
  using namespace tl;
  std::vector<std::string> args(argv + 1, argv + argc), jobFlags;
  auto dashes = std::find(args.begin(), args.end(), "--");
  if (dashes != args.end()) {
    jobFlags.assign(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }
  profile::BurstSpec spec;
  spec.mpirun = submit::defaultMpirunOptions();
  std::string sweepText = "0,1,2,4", out, mpiArgs, cacheGridText, cacheCheckText;
  double tolerance = 0.02, cacheMb = -1;

  auto app = cli::makeApp(kProgram, kSummary);
  app->add_option("--workers-sweep", sweepText, "loader worker counts to try, comma-separated")
      ->capture_default_str();
  cli::addInt(*app, "--max-iterations", &spec.steps, "training steps per burst", 1, 1 << 20);
  cli::addInt(*app, "--warmup-steps", &spec.warmupSteps,
              "first steps of a burst left out of its rate (0: none)", 0);
  app->add_option("--out", out, "folder for the bursts and profile.csv/json/png (required)");
  cli::addInt(*app, "--processes", &spec.processes, "mpirun -np", 1, 4096);
  app->add_option("--cpus", spec.cpus,
                  "run each burst under `taskset -c CPUS` (e.g. 0-1): a CPU limit");
  cli::addDouble(*app, "--tolerance", &tolerance,
                 "recommend the smallest w within this share of the best", 0, 1);
  app->add_option("--mpirun", spec.mpirun.mpirun, "mpirun to use")->capture_default_str();
  app->add_option("--tl-launch", spec.mpirun.tlLaunch, "tl-launch to run")->capture_default_str();
  app->add_flag("--oversubscribe", spec.mpirun.oversubscribe,
                "pass --oversubscribe (more processes than cores)");
  app->add_option("--bind-to", spec.mpirun.bindTo,
                  "mpirun --bind-to; none lets loader threads use every allowed core (empty: "
                  "mpirun's default)")
      ->capture_default_str();
  app->add_option("--mpi-args", mpiArgs, "more mpirun arguments, blank-separated");
  cli::addDouble(*app, "--cache-mb", &cacheMb,
                 "profile the dataset cache too: the sweep runs with this budget (MiB)", 0,
                 1 << 30);
  app->add_option("--cache-grid", cacheGridText,
                  "cache budgets (MiB) of the 2-D grid; default 0,M/4,M/2,3M/4,M");
  app->add_option("--cache-check", cacheCheckText,
                  "W:MB points measured by check bursts; default: the recommended w at 0 and M/2");
  if (!cli::parse(*app, args)) return cli::kExitOk;
  TL_REQUIRE(!out.empty(), "--out: required (the folder for the bursts and the profile)");
  TL_REQUIRE(spec.warmupSteps < spec.steps, "--warmup-steps (", spec.warmupSteps,
             ") must be below --max-iterations (", spec.steps, ")");
  std::vector<int64_t> listed = cli::parseIntList(sweepText, "--workers-sweep");
  std::set<int> sweep;
  for (int64_t w : listed) {
    TL_REQUIRE(w >= 0 && w <= 256, "--workers-sweep: worker counts must be between 0 and 256, got ",
               w);
    sweep.insert(int(w));
  }
  const bool twoDimensions = cacheMb >= 0;
  TL_REQUIRE(twoDimensions || (cacheGridText.empty() && cacheCheckText.empty()),
             "--cache-grid and --cache-check need --cache-mb (the full budget)");
  const std::vector<double> cacheGrid =
      cacheGridText.empty() ? profile::defaultCacheGrid(cacheMb) : profile::parseCacheGrid(cacheGridText);
  std::vector<profile::CacheCheck> checks = profile::parseCacheChecks(cacheCheckText);
  checkJobFlags(jobFlags, twoDimensions);
  if (twoDimensions) jobFlags.insert(jobFlags.end(), {"--cache-mb", profile::cacheFlagValue(cacheMb)});
  // The 2-D profile describes the steady state: each burst's rate is measured after its first
  // epoch (every read there is a first read, whatever the budget) when it gets that far.
  spec.skipFirstEpoch = twoDimensions;
  TL_REQUIRE(fileExists(spec.mpirun.tlLaunch), "tl-launch not found at '", spec.mpirun.tlLaunch,
             "' (use --tl-launch)");
  spec.mpirun.extraMpiArgs = cli::splitBlanks(mpiArgs);
  spec.jobFlags = jobFlags;
  ensureWritableDir(out);
  // A job that cannot start fails every burst the same way: ask tl-launch once, up front.
  const int firstWorkers = *sweep.begin();
  const auto check = submit::checkWithTlLaunch(
      spec.mpirun.tlLaunch, spec.processes,
      profile::burstLaunchFlags(spec, firstWorkers,
                                joinPath(out, "burst_" + std::to_string(firstWorkers))));
  TL_REQUIRE(check.ok, "tl-launch refuses the job: ", check.error);

  submit::installInterruptCounter();
  spec.interrupts = submit::interruptsReceived;
  std::vector<profile::BurstMeasurement> bursts;
  for (int w : sweep) {
    std::string folder = joinPath(out, "burst_" + std::to_string(w));
    std::printf("%s: burst with %d loader worker(s), %d steps -> %s\n", kProgram, w, spec.steps,
                folder.c_str());
    std::fflush(stdout);
    bursts.push_back(profile::runBurst(spec, w, folder));
    if (!bursts.back().ok())
      std::printf("%s: burst w=%d failed: %s\n", kProgram, w, bursts.back().note.c_str());
    if (submit::interruptsReceived() > 0) {
      std::fprintf(stderr, "%s: interrupted; no profile written\n", kProgram);
      return cli::kExitInterrupted;
    }
  }
  profile::ProfileResult result = profile::analyseSweep(bursts, tolerance);
  profile::writeProfileFiles(result, out);
  std::printf("\n%s", profile::profileTable(result).c_str());
  std::printf("wrote %s, %s, %s\n", joinPath(out, "profile.csv").c_str(),
              joinPath(out, "profile.json").c_str(), joinPath(out, "profile.png").c_str());
  if (twoDimensions) {
    const int rc = runCacheDimension(spec, result, out, cacheMb, cacheGrid, checks);
    if (rc != cli::kExitOk) return rc;
  }
  return result.recommended >= 0 ? cli::kExitOk : cli::kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return runProfile(argc, argv); });
}
