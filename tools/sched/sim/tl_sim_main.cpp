// tl-sim: replays a job trace (a CSV or a seeded preset) on a simulated cluster under each
// scheduling policy and reports JCTs, utilisation and rescales, as CSV, a table and PNG plots.
#include <chrono>
#include <cstdio>
#include <map>

#include "common/check.h"
#include "common/files.h"
#include "common/cli/cli.h"
#include "tools/sched/sim/generator.h"
#include "tools/sched/sim/report.h"
#include "tools/sched/resources/resource_cli.h"
#include "tools/sched/sim/trace.h"

namespace {

constexpr const char* kProgram = "tl-sim";

constexpr const char* kSummary =
    "Simulates a cluster scheduler over a job trace, once per policy.\n"
    "Run as: tl-sim --preset easyscale --out DIR\n"
    "   or:  tl-sim --trace jobs.csv --cluster fast:32,mid:16,slow:16 --out DIR\n"
    "\n"
    "Policies: yarn-cs (capacity queues, FIFO, gang, no elasticity), las (Tiresias-like least\n"
    "attained service, preemptive, gang), elastic (min..max GPUs of one kind, fair shares),\n"
    "elastic-hetero (several kinds at once, ESTs placed by tl's planner), goodput (Pollux-style:\n"
    "every 60 s all allocations chosen together for the p = -1 mean of speedups over a fair\n"
    "share, each change charged the rescale cost), hetero-goodput (tl's default: goodput's\n"
    "objective over mixed-kind allocations, decided at every arrival and completion too,\n"
    "least-attained-service admission, tl's in-place rescale charged). Each allocation\n"
    "change of a running job costs --rescale-cost seconds of progress. Writes DIR/summary.csv,\n"
    "DIR/jobs_<policy>.csv, DIR/trace.csv and DIR/jct_cdf.png, DIR/allocation.png,\n"
    "DIR/mean_jct.png; per policy also the queueing share of JCT and the utilisation during\n"
    "the arrival window (util-a). Trace columns: "
    "id,arrival_s,model,work_samples,min_gpus,max_gpus\n"
    "[,request_gpus][,ests][,queue]; profiles: model,kind,gpus,samples_per_s (see README).\n"
    "--in-place-only: the policies do only what tl-sched's real jobs can (one kind per job,\n"
    "kept once started, no preemption: yarn-cs, elastic, hetero-goodput; the default list\n"
    "becomes those three), to predict a tl-sched run.\n"
    "`tl-sim resources --help`: GPUs, CPU cores and cache memory scheduled together.";

int runSim(int argc, char** argv) {
  using namespace tl;
  using namespace tl::sched;
  std::string presetName, tracePath, kinds, queues, profilesPath,
      policies = "yarn-cs,las,elastic,elastic-hetero,goodput,hetero-goodput", out;
  double rescaleCost = 0, startCost = 0, load = 0;
  int64_t seed = 1;
  int jobs = 0, grow = 0;
  bool inPlaceOnly = false;
  auto app = cli::makeApp(kProgram, kSummary);
  app->add_option("--preset", presetName, "a generated trace: pollux, easyscale or large");
  app->add_option("--trace", tracePath, "a trace CSV to replay instead of a preset");
  app->add_option("--cluster", kinds, "GPU kinds, KIND:COUNT,... (a preset brings its own)");
  app->add_option("--queues", queues,
                  "capacity queues NAME:GUARANTEED:MAX,... (default: the trace's queues, equal shares)");
  app->add_option("--profiles", profilesPath, "profile CSV (default: the built-in profiles)");
  app->add_option("--policies", policies, "policies to run, comma-separated")->capture_default_str();
  cli::addDouble(*app, "--rescale-cost", &rescaleCost, "seconds a rescale pauses a job", 0, 1e6);
  cli::addDouble(*app, "--start-cost", &startCost,
                 "seconds a job's first start takes before it progresses", 0, 1e6);
  cli::addInt(*app, "--seed", &seed, "generator seed (presets)", 0);
  cli::addDouble(*app, "--load", &load,
                 "with --preset: contention over the arrival window (the preset's span, or "
                 "three mean holds of a job's GPUs on the slowest kind if longer: easyscale "
                 "29,436 s): arrivals at the preset's pattern, as many as make the work they "
                 "offer inside "
                 "the window at their request (request x min(duration, window - arrival)) "
                 "L x capacity x window; L > 1 queues a non-elastic scheduler",
                 0.01, 100);
  cli::addInt(*app, "--grow", &grow,
              "with --preset: elastic jobs may grow to this many times their request (the "
              "presets: 4; 1: max = request)",
              1, 64);
  cli::addInt(*app, "--jobs", &jobs, "with --preset: this many jobs instead of the preset's", 1, 10000000);
  app->add_flag("--in-place-only", inPlaceOnly,
                "policies ask only for what tl-sched's real jobs can do (see above)");
  app->add_option("--out", out, "output folder (required)");
  if (!cli::parse(*app, argc, argv)) return cli::kExitOk;

  TL_REQUIRE(presetName.empty() != tracePath.empty(), "give exactly one of --preset and --trace");
  TL_REQUIRE(!out.empty(), "--out: required (the folder for the CSVs and plots)");
  const ProfileSet profiles = profilesPath.empty()
                                  ? ProfileSet::builtin()
                                  : ProfileSet::parse(readFile(profilesPath), profilesPath);
  ClusterSpec cluster;
  std::vector<JobSpec> trace;
  if (!presetName.empty()) {
    Preset p = preset(presetName);
    cluster = p.cluster;
    if (!kinds.empty()) cluster.kinds = parseKinds(kinds, "--cluster");
    p.generator.seed = uint64_t(seed);
    if (jobs > 0) p.generator.jobs = jobs;
    if (grow > 0) p.generator.growFactor = grow;
    p.generator.arrivalLoad = load;
    p.generator.referenceKind = cluster.kinds[0].name;
    trace = generateTrace(p.generator, profiles);
    // --load's window (longer than the span where jobs hold slow GPUs long; generator.h).
    const double window =
        load > 0 ? loadWindowSeconds(p.generator, profiles) : p.generator.spanSeconds;
    p.generator.loadKinds = cluster.kinds;
    std::printf("%s: preset %s, %zu jobs; offered load inside the arrival window (0 to %.0f s) "
                "at request size: %.2f\n",
                kProgram, presetName.c_str(), trace.size(), window,
                offeredWindowLoad(trace, window, p.generator, profiles));
  } else {
    TL_REQUIRE(!kinds.empty(), "--cluster: required with --trace (e.g. fast:32,mid:16)");
    TL_REQUIRE(load == 0, "--load: only with --preset (a replayed trace keeps its arrivals)");
    TL_REQUIRE(grow == 0, "--grow: only with --preset (a replayed trace keeps its max_gpus)");
    cluster.kinds = parseKinds(kinds, "--cluster");
    trace = readTrace(tracePath);
    if (queues.empty()) {
      std::map<std::string, int> names;
      for (const auto& j : trace) names.emplace(j.queue, 0);
      for (const auto& [name, unused] : names)
        cluster.queues.push_back({name, 1.0 / double(names.size()), 1});
    }
  }
  if (!queues.empty()) cluster.queues = parseQueues(queues, "--queues");
  checkTraceFits(trace, cluster);
  profiles.requireCovers(cluster, trace);
  if (inPlaceOnly && app->count("--policies") == 0) policies = "yarn-cs,elastic,hetero-goodput";
  std::vector<std::string> names;
  for (const auto& name : cli::splitBlanks([&] {
         std::string s = policies;
         for (char& c : s) c = c == ',' ? ' ' : c;
         return s;
       }()))
    names.push_back(name);
  TL_REQUIRE(!names.empty(), "--policies: no policy given");
  const ThroughputModel model(cluster, profiles);
  PolicyOptions policyOptions{rescaleCost};
  policyOptions.inPlaceOnly = inPlaceOnly;
  for (const auto& name : names)
    makePolicy(name, model, policyOptions);  // unknown names fail first
  ensureWritableDir(out);

  std::vector<SimResult> results;
  std::vector<SimSummary> summaries;
  results.reserve(names.size());
  for (const auto& name : names) {
    auto policy = makePolicy(name, model, policyOptions);
    const auto t0 = std::chrono::steady_clock::now();
    results.push_back(simulate(trace, model, *policy, {rescaleCost, startCost}));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %-15s %zu jobs simulated in %.2f s (%d decisions)\n", kProgram, name.c_str(),
                trace.size(), seconds, results.back().decisions);
    summaries.push_back(results.back().summary);
    writeFileAtomic(joinPath(out, "jobs_" + name + ".csv"), jobsCsv(results.back()));
  }
  std::vector<PolicyRun> runs;
  for (size_t i = 0; i < names.size(); ++i) runs.push_back({names[i], &results[i]});
  writeFileAtomic(joinPath(out, "trace.csv"), formatTrace(trace));
  writeFileAtomic(joinPath(out, "summary.csv"), summaryCsv(summaries, rescaleCost));
  writeFileAtomic(joinPath(out, "jct_cdf.png"), jctCdfPng(runs));
  writeFileAtomic(joinPath(out, "allocation.png"), allocationPng(runs, cluster.totalGpus()));
  writeFileAtomic(joinPath(out, "mean_jct.png"), meanJctBarsPng(runs));
  std::printf("\n%s", summaryTable(summaries).c_str());
  return cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "resources") {  // CPU x memory: resource_cli.h
    return tl::cli::run("tl-sim resources", [&] { return tl::sched::runResourceSim(argc - 1, argv + 1); });
  }
  return tl::cli::run(kProgram, [&] { return runSim(argc, argv); });
}
