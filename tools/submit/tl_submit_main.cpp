// tl-submit: runs the jobs of a CSV table through mpirun + tl-launch and reports how each went.
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "common/check.h"
#include "common/files.h"
#include "coordinator/unix_socket.h"
#include "common/cli/cli.h"
#include "tools/submit/child_process.h"
#include "tools/submit/coordinator_hook.h"
#include "tools/submit/dispatcher.h"
#include "tools/submit/job_table.h"
#include "tools/submit/launch_check.h"
#include "tools/submit/mpirun_command.h"
#include "tools/submit/report.h"

namespace {

constexpr const char* kProgram = "tl-submit";

constexpr const char* kSummary =
    "Runs the jobs of a CSV table (one row each) as `mpirun -np P tl-launch ...`, one\n"
    "after another or all at once (--background), and reports start, end, completion time,\n"
    "images/s, final loss and exit status of each.\n"
    "Run as: tl-submit JOBS.csv [flags]  (or --jobs JOBS.csv; flags may also come first)\n"
    "\n"
    "Required columns: arch,depth,batch,workers,output_folder,port,submit_interval,\n"
    "                  cuda_device\n"
    "Optional columns: name,processes,logical_workers,dataset,data_dir,steps,epochs,device,\n"
    "                  lr,seed,extra\n"
    "  arch            resnet18|resnet|shufflenetv2|cnn|mlp, or resnetD (resnet, depth D)\n"
    "  depth           resnet depth (6n+2); empty or 0: none\n"
    "  workers         loader threads per process, or auto (sized by the node coordinator)\n"
    "  output_folder   tl-launch --output-dir; also gets job.log (the job's stdout+stderr)\n"
    "  port            first of --port-range TCP ports Open MPI's TCP transport may use for\n"
    "                  this job (btl_tcp_port_min_v4/range_v4), so concurrent jobs never\n"
    "                  collide; empty: Open MPI's default (any free port)\n"
    "  submit_interval seconds to wait after the previous submission (first job: after start)\n"
    "  cuda_device     space-separated GPU list, exported as CUDA_VISIBLE_DEVICES to the\n"
    "                  job's ranks; empty: left as it is\n"
    "  name            label in the report (default: the output folder's last component)\n"
    "  processes       mpirun -np (default 1)      logical_workers  tl-launch --logical-workers\n"
    "  device          cpu|cuda|sim:RATE           extra            more tl-launch flags\n"
    "  dataset, data_dir, steps, epochs, lr, seed: the tl-launch flags of the same name\n"
    "Fields may be quoted (\"a,b\"); blank lines and lines starting with # are skipped. A bad\n"
    "row is reported as FILE:LINE before anything starts (exit 2). Ctrl-C: no new jobs start\n"
    "and the running ones get SIGINT. Exit status: 0 all jobs succeeded, 1 some failed,\n"
    "130 interrupted.";

// Every job, checked by tl-launch itself (`tl-launch --check`) with the flags and environment
// it will run with, before any starts: "<table>:<line>: tl-launch refuses the job: <why>".
std::vector<std::string> checkJobsWithTlLaunch(const std::vector<tl::submit::SubmitJob>& jobs,
                                               const tl::submit::MpirunOptions& mpi,
                                               const std::string& source) {
  std::vector<std::string> refused;
  for (const auto& job : jobs) {
    const auto command = tl::submit::jobCommand(mpi, job);
    const auto check = tl::submit::checkWithTlLaunch(
        mpi.tlLaunch, job.processes, tl::submit::jobLaunchFlags(mpi, job), command.setEnv);
    if (!check.ok)
      refused.push_back(
          tl::str(source, ":", job.line, ": tl-launch refuses the job: ", check.error));
  }
  return refused;
}

int runSubmit(int argc, char** argv) {
  using namespace tl;
  using namespace tl::submit;
  std::string jobsPath;
  MpirunOptions mpi = defaultMpirunOptions();
  std::string report = joinPath(std::filesystem::current_path().string(), "submit_report.csv");
  std::string mpiArgs;
  bool background = false, dryRun = false;
  CoordinatorSettings coordinator{tl::coordinator::defaultRunDir(),
                                  joinPath(executableDir(), "tl-coordinator")};

  auto app = cli::makeApp(kProgram, kSummary);
  app->add_option("jobs,--jobs", jobsPath, "the job table (CSV); may also be the first argument");
  app->add_flag("--background", background, "start jobs without waiting for earlier ones to end");
  app->add_option("--report", report, "where the report CSV goes")->capture_default_str();
  app->add_option("--mpirun", mpi.mpirun, "mpirun to use")->capture_default_str();
  app->add_option("--tl-launch", mpi.tlLaunch, "tl-launch to run")->capture_default_str();
  app->add_flag("--oversubscribe", mpi.oversubscribe,
                "pass --oversubscribe (more processes than cores)");
  app->add_option("--bind-to", mpi.bindTo,
                  "mpirun --bind-to; none lets a rank's loader threads use every core (empty: "
                  "mpirun's default)")
      ->capture_default_str();
  cli::addInt(*app, "--port-range", &mpi.portRange, "TCP ports per job, from its port column", 1,
              10000);
  app->add_option("--mpi-args", mpiArgs, "more mpirun arguments, blank-separated");
  app->add_option("--coordinator", coordinator.binary,
                  "node coordinator started for workers=auto jobs")
      ->capture_default_str();
  CLI::Option* coordinatorDir =
      app->add_option("--coordinator-dir", coordinator.runDir,
                      "the node coordinator's run folder (also given to workers=auto jobs)")
          ->capture_default_str();
  app->add_flag("--dry-run", dryRun, "check the table and print the commands; run nothing");
  if (!cli::parse(*app, argc, argv)) return cli::kExitOk;
  TL_REQUIRE(!jobsPath.empty(),
             "no job table: give JOBS.csv as the first argument or --jobs (see --help)");
  mpi.extraMpiArgs = cli::splitBlanks(mpiArgs);
  if (coordinatorDir->count() > 0) mpi.autoWorkersFlags = {"--coordinator-dir", coordinator.runDir};

  JobTableOptions tableOptions;
  tableOptions.portRange = mpi.portRange;
  tableOptions.concurrent = background;
  JobTable table = readJobTable(jobsPath, tableOptions);
  if (!table.errors.empty()) {
    for (const auto& e : table.errors) std::fprintf(stderr, "%s: error: %s\n", kProgram, e.c_str());
    std::fprintf(stderr, "%s: %zu problem(s) in %s; nothing was started\n", kProgram,
                 table.errors.size(), jobsPath.c_str());
    return cli::kExitBadInput;
  }
  TL_REQUIRE(tl::fileExists(mpi.tlLaunch), "tl-launch not found at '", mpi.tlLaunch,
             "' (use --tl-launch)");
  std::vector<std::string> refused = checkJobsWithTlLaunch(table.jobs, mpi, jobsPath);
  if (!refused.empty()) {
    for (const auto& e : refused) std::fprintf(stderr, "%s: error: %s\n", kProgram, e.c_str());
    std::fprintf(stderr, "%s: tl-launch refuses %zu of the %zu job(s) in %s; nothing was started\n",
                 kProgram, refused.size(), table.jobs.size(), jobsPath.c_str());
    return cli::kExitBadInput;
  }
  if (!dryRun) {
    ensureWritableDir(std::filesystem::path(report).parent_path().string(), "report folder");
    std::string started = ensureCoordinatorForAutoJobs(table.jobs, coordinator);
    if (!started.empty()) std::printf("%s: %s\n", kProgram, started.c_str());
  }

  installInterruptCounter();
  DispatchOptions options;
  options.background = background;
  options.mpirun = mpi;
  options.dryRun = dryRun;
  options.interrupts = interruptsReceived;
  std::vector<JobOutcome> outcomes = runJobs(table.jobs, options);
  if (dryRun) return 0;

  tl::writeFileAtomic(report, reportCsv(table.jobs, outcomes));
  std::printf("\n%s", reportTable(table.jobs, outcomes).c_str());
  std::printf("report: %s\n", report.c_str());
  std::fflush(stdout);
  if (interruptsReceived() > 0) return cli::kExitInterrupted;
  for (const auto& o : outcomes) {
    if (o.exitCode != 0) return cli::kExitFailure;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return runSubmit(argc, argv); });
}
