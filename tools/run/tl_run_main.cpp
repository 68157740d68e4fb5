// tl-run: a training job that survives lost ranks. `tl-run --np 4 [options] -- <tl-launch flags>`
// runs `mpirun -np 4 tl-launch <flags>`; when a rank is killed, crashes or hangs, it starts the
// job again on the processes that remain from the last step boundary, up to --max-restarts
// times. Exit status: 0 when the job finished; 1 when it was lost once too often or no copy of
// its state survived (the message names the last good checkpoint); 2 for bad flags.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/files.h"
#include "common/cli/cli.h"
#include "common/cli/host_list.h"
#include "tools/run/supervisor.h"

namespace {

constexpr const char* kProgram = "tl-run";

// tl-launch next to this executable.
std::string siblingLaunch() {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  return (self.parent_path() / "tl-launch").string();
}

int run(int argc, char** argv) {
  std::vector<std::string> own, job;
  bool split = false;
  for (int i = 1; i < argc; ++i) {
    if (!split && std::string(argv[i]) == "--") {
      split = true;
      continue;
    }
    (split ? job : own).push_back(argv[i]);
  }
  tl::run::SupervisorOptions o;
  o.launch = siblingLaunch();
#if TL_OPEN_MPI_5
  // Open MPI 5: in place does not hold yet (docs/guide/debian13.md, "In-place recovery").
  std::string hosts, mpirunArgs, recovery = "restart";
#else
  std::string hosts, mpirunArgs, recovery = "in-place";
#endif
  auto app = tl::cli::makeApp(
      kProgram,
      "Runs a tl-launch job under mpirun and keeps it going when a rank is lost: killed, crashed,\n"
      "or hung for --hang-timeout seconds. By default (--recovery in-place) the survivors of a\n"
      "killed or crashed rank, or of a host lost (member heartbeats), go on in their own processes\n"
      "at the last step boundary; otherwise (a hang, the lead lost, --recovery restart) they\n"
      "write the job at that boundary and tl-run starts it again on the processes that remain\n"
      "(hosts that were lost are left out).\n"
      "Either way: the same N logical workers, global batch and bits.\n"
      "Usage: tl-run --np P [options] -- <tl-launch flags, --output-dir required>");
  tl::cli::addInt(*app, "--np", &o.processes, "processes of the first launch", 1, 65536)->required();
  tl::cli::addInt(*app, "--max-restarts", &o.maxRestarts, "lost launches survived; one more ends with an error", 0, 1000);
  tl::cli::addDouble(*app, "--hang-timeout", &o.hangTimeoutSeconds,
                     "seconds a collective waits for a rank before the rank counts as lost", 0.5, 86400);
  tl::cli::addDouble(*app, "--kill-grace", &o.killGraceSeconds,
                     "seconds survivors have to write their copy of the job before mpirun kills them", 5, 3600);
  app->add_option(
         "--recovery", recovery,
         "in-place: the survivors of a lost rank go on in their processes (mpirun "
         "--enable-recovery), "
         "falling back to a restart when that cannot work; restart: every loss restarts the job "
         "(the default, and the only mode, with Open MPI 5)")
      ->capture_default_str();
  std::string growBack = "on";
  app->add_option("--grow-back", growBack,
                  "on: after an in-place recovery, the job grows back in place to --np processes (tl-ctl "
                  "rescale over its control channel); off: it goes on with the survivors")
      ->capture_default_str();
  app->add_option("--hosts", hosts, "host:slots,... for mpirun --host; lost hosts are left out of restarts");
  app->add_option("--mpirun", o.mpirun, "the mpirun to use")->capture_default_str();
  app->add_option("--mpirun-args", mpirunArgs, "more mpirun arguments, e.g. \"--oversubscribe\"");
  app->add_option("--launch", o.launch, "the tl-launch to run")->capture_default_str();
  if (!tl::cli::parse(*app, own)) return tl::cli::kExitOk;
  TL_REQUIRE(split, "give the job's tl-launch flags after '--' (see tl-run --help)");
  TL_REQUIRE(recovery == "in-place" || recovery == "restart", "--recovery: '", recovery,
             "' is not a recovery mode; give in-place or restart");
#if TL_OPEN_MPI_5
  TL_REQUIRE(recovery != "in-place",
             "--recovery in-place: not available with Open MPI 5 (this tl-run's): its runtime ends "
             "every process "
             "when one started by an in-place grow is lost, and its fault-tolerant MPI fails the "
             "survivors' new "
             "communicator; --recovery restart, the default here, recovers the job from the "
             "survivors' copies with "
             "no step lost (docs/guide/debian13.md)");
#endif
  o.inPlace = recovery == "in-place";
  TL_REQUIRE(growBack == "on" || growBack == "off", "--grow-back: '", growBack, "' is not on or off");
  o.growBack = growBack == "on";
  if (!hosts.empty()) o.hosts = tl::cli::parseHostList(hosts, "--hosts");
  o.mpirunArgs = tl::cli::splitBlanks(mpirunArgs);
  o.launchArgs = job;
  return tl::run::supervise(o);
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return run(argc, argv); });
}
