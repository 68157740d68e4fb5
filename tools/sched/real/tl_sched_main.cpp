// tl-sched: one of tl-sim's policies driving real tl jobs on this machine's process slots.
#include <cstdio>
#include <map>
#include <sstream>
#include <unistd.h>

#include "common/check.h"
#include "common/files.h"
#include "common/cli/cli.h"
#include "tools/sched/real/real_scheduler.h"
#include "tools/sched/sim/report.h"
#include "tools/sched/sim/trace.h"
#include "tools/submit/child_process.h"

namespace {

constexpr const char* kProgram = "tl-sched";

constexpr const char* kSummary =
    "Runs a job trace as real tl jobs under one scheduling policy: starts each job with\n"
    "`mpirun tl-launch` (N ESTs = its max_gpus unless the trace says, --steps from its work),\n"
    "grows and shrinks it in place with `tl-ctl rescale`, one process per slot.\n"
    "Run as: tl-sched --trace jobs.csv --slots fast:2,slow:2:2 --out DIR \\\n"
    "          --launch-flags '--dataset cifar10 --data-dir D --device sim:400'\n"
    "\n"
    "Slots are NAME:COUNT[:SLOWDOWN]: a kind's processes run with tl-launch\n"
    "--emulate-slowdown SLOWDOWN. A real job runs on one kind and keeps it (rank 0 never\n"
    "leaves), is never preempted, shrinks by its last ranks and grows onto free slots.\n"
    "Policies: hetero-goodput (the default, as in tl-sim: goodput's objective, decided at every\n"
    "event, here asked only for what real jobs can do: tl-sim --in-place-only), elastic,\n"
    "yarn-cs. --profiles is what the policy believes of speeds (tl-sim's\n"
    "format); default: linear in processes, 1/SLOWDOWN per kind. Writes DIR/jobs.csv (tl-sim's\n"
    "columns), DIR/real_jobs.csv (status, rescales, pauses, params_sha256), DIR/events.csv,\n"
    "DIR/summary.csv, DIR/allocation.png, and each job's output in DIR/jobs/ID, logs in\n"
    "DIR/logs. Exit status 1 when a job failed.";

// Linear in processes, one over the kind's slowdown: what the policy assumes without measurements.
tl::sched::ProfileSet linearProfiles(const std::vector<tl::sched::JobSpec>& trace,
                                     const std::vector<tl::sched::SlotKind>& kinds) {
  std::map<std::string, int> models;
  for (const auto& j : trace) models[j.model] = 0;
  std::ostringstream csv;
  csv << "model,kind,gpus,samples_per_s\n";
  for (const auto& [model, unused] : models)
    for (const auto& k : kinds) csv << model << ',' << k.name << ",1," << 1000.0 / k.slowdown << '\n';
  return tl::sched::ProfileSet::parse(csv.str(), "linear profiles");
}

int runSched(int argc, char** argv) {
  using namespace tl;
  using namespace tl::sched;
  std::string tracePath, slotsText, policyName = "hetero-goodput", profilesPath, out, launchFlags;
  RealRunOptions options;
  const std::string here = submit::executableDir();
  // Installed, the tools share a folder; in the build tree tl-sched is one below the others.
  const std::string tools = fileExists(joinPath(here, "tl-launch")) ? here : joinPath(here, "..");
  options.job.tlLaunch = joinPath(tools, "tl-launch");
  options.job.tlCtl = joinPath(tools, "tl-ctl");
  options.job.allowRunAsRoot = ::geteuid() == 0;
  auto app = cli::makeApp(kProgram, kSummary);
  app->add_option("--trace", tracePath, "the job trace (tl-sim's CSV columns; required)");
  app->add_option("--slots", slotsText, "slot kinds NAME:COUNT[:SLOWDOWN],... (required)");
  app->add_option("--policy", policyName, "hetero-goodput, elastic or yarn-cs")->capture_default_str();
  app->add_option("--profiles", profilesPath, "the policy's speed profiles (tl-sim's format)");
  app->add_option("--launch-flags", launchFlags,
                  "more tl-launch flags for every job, blank-separated (data set, device, ...)");
  cli::addInt(*app, "--batch", &options.job.batch, "tl-launch --batch (per EST)", 1, 1 << 20);
  cli::addDouble(*app, "--tick", &options.tickSeconds, "seconds between periodic decisions", 0.05, 3600);
  cli::addDouble(*app, "--time-limit", &options.timeLimitSeconds,
                 "stop every job and fail after this many seconds (0: none)", 0, 1e7);
  app->add_option("--mpirun", options.job.mpirun, "mpirun to start jobs with")->capture_default_str();
  app->add_option("--tl-launch", options.job.tlLaunch, "tl-launch (default: next to tl-sched, or one folder up)");
  app->add_option("--tl-ctl", options.job.tlCtl, "tl-ctl (default: next to tl-launch)");
  app->add_option("--out", out, "output folder (required)");
  if (!cli::parse(*app, argc, argv)) return cli::kExitOk;

  TL_REQUIRE(!tracePath.empty(), "--trace: required (the job trace CSV)");
  TL_REQUIRE(!slotsText.empty(), "--slots: required (e.g. fast:2,slow:2:2)");
  TL_REQUIRE(!out.empty(), "--out: required (the folder for the jobs, logs and CSVs)");
  requireRealPolicy(policyName);
  SlotTable slots(parseSlotKinds(slotsText, "--slots"));
  const std::vector<JobSpec> trace = readTrace(tracePath);
  TL_REQUIRE(!trace.empty(), tracePath, ": no jobs");
  ClusterSpec cluster = slots.cluster();
  checkTraceFits(trace, cluster);
  checkRealTrace(trace, slots);
  const ProfileSet profiles = profilesPath.empty()
                                  ? linearProfiles(trace, slots.kinds())
                                  : ProfileSet::parse(readFile(profilesPath), profilesPath);
  profiles.requireCovers(cluster, trace);
  options.job.launchFlags = cli::splitBlanks(launchFlags);
  TL_REQUIRE(fileExists(options.job.tlLaunch), "--tl-launch: ", options.job.tlLaunch, " does not exist");
  TL_REQUIRE(fileExists(options.job.tlCtl), "--tl-ctl: ", options.job.tlCtl, " does not exist");
  ensureWritableDir(out);
  TL_REQUIRE(!fileExists(joinPath(out, "jobs")), out,
             ": holds an earlier tl-sched run (jobs/); give a new folder");
  options.outDir = out;
  const ThroughputModel model(cluster, profiles);
  PolicyOptions policyOptions;
  policyOptions.inPlaceOnly = true;  // what it asks is what real jobs can do
  auto policy = makePolicy(policyName, model, policyOptions);

  const RealRunResult r = runReal(trace, slots, *policy, options);
  writeFileAtomic(joinPath(out, "jobs.csv"), jobsCsv(r.run));
  writeFileAtomic(joinPath(out, "real_jobs.csv"), realJobsCsv(r));
  writeFileAtomic(joinPath(out, "summary.csv"), summaryCsv({r.run.summary}, 0));
  writeFileAtomic(joinPath(out, "allocation.png"),
                  allocationPng({{policyName, &r.run}}, slots.size()));
  std::printf("%s", summaryTable({r.run.summary}).c_str());
  for (const auto& rec : r.records)
    if (rec.status != "done")
      std::fprintf(stderr, "%s: job %s %s (exit status %d; see %s/logs/%s.log)\n", kProgram,
                   rec.id.c_str(), rec.status.c_str(), rec.exitCode, out.c_str(), rec.id.c_str());
  return r.allDone() ? cli::kExitOk : cli::kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return runSched(argc, argv); });
}
