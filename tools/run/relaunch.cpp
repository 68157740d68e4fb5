#include "tools/run/relaunch.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/check.h"
#include "elastic/recovery/member_heartbeat.h"
#include "tools/mpirun/mpirun_command.h"

namespace tl::run {
namespace {

// The value of `--name v` or `--name=v` in `args` (empty when absent).
std::string flagValue(const std::vector<std::string>& args, const std::string& name) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind(name + "=", 0) == 0) return args[i].substr(name.size() + 1);
  }
  return "";
}

bool hasFlag(const std::vector<std::string>& args, const std::string& name) {
  for (const auto& a : args)
    if (a == name || a.rfind(name + "=", 0) == 0) return true;
  return false;
}

std::vector<std::string> withoutFlag(const std::vector<std::string>& args, const std::string& name) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      ++i;
      continue;
    }
    if (args[i].rfind(name + "=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

}  // namespace

void checkOptions(const SupervisorOptions& o) {
  TL_REQUIRE(o.processes >= 1, "--np: give the number of processes to start (at least 1)");
  TL_REQUIRE(!outputDirOf(o).empty(), "tl-run needs the job's --output-dir (metrics, summary and recovery go there)");
  TL_REQUIRE(!hasFlag(o.launchArgs, "--collective-timeout"),
             "--collective-timeout: give tl-run --hang-timeout instead (tl-run sets it)");
  TL_REQUIRE(!hasFlag(o.launchArgs, "--recovery-dir"), "--recovery-dir is set by tl-run");
}

std::string outputDirOf(const SupervisorOptions& o) { return flagValue(o.launchArgs, "--output-dir"); }

std::string checkpointDirOf(const SupervisorOptions& o) {
  const std::string given = flagValue(o.launchArgs, "--checkpoint-dir");
  return given.empty() ? outputDirOf(o) + "/checkpoint" : given;
}

elastic::RecoveryPaths recoveryPathsOf(const SupervisorOptions& o) {
  return {std::filesystem::absolute(outputDirOf(o) + "/recovery").lexically_normal().string()};
}

LaunchPlan firstLaunch(const SupervisorOptions& o) {
  return {0, o.processes, o.hosts, flagValue(o.launchArgs, "--resume")};
}

std::vector<std::string> launchCommand(const SupervisorOptions& o, const LaunchPlan& plan) {
  mpirun::LaunchCommand c;
  c.mpirun = o.mpirun;
  c.hosts = plan.hosts;
  c.processes = plan.processes;
  // Survivors need time to write their copy after mpirun's SIGTERM.
  c.mca = {{"odls_base_sigkill_timeout", std::to_string(int(o.killGraceSeconds))}};
  c.extraArgs = o.mpirunArgs;
  if (o.inPlace) {
    // A lost rank does not end the job; the survivors are told to go on in place, and a process
    // that fails says its status through a file (mpirun then exits 0 whatever the statuses).
    c.extraArgs.insert(c.extraArgs.begin(),
                       {"--enable-recovery", "-x", std::string(elastic::kInPlaceEnv) + "=1", "-x",
                        std::string(elastic::kExitFileEnv) + "=" + recoveryPathsOf(o).exitStatuses()});
    // The heartbeat deadline given to tl-run reaches every host (member_heartbeat.h).
    if (const char* deadline = std::getenv(elastic::heartbeat::kDeadlineEnv))
      c.extraArgs.insert(c.extraArgs.begin(), {"-x", std::string(elastic::heartbeat::kDeadlineEnv) + "=" + deadline});
  }
#if TL_OPEN_MPI_5
  // Open MPI 5's daemon ignores that setting and sends SIGCONT, SIGTERM and SIGKILL 0.25 s apart:
  // too short for a survivor to finish an update in flight and write its copy. A recoverable job
  // with error notification is ended by nobody but told of the loss (PMIx event), on which each
  // survivor writes its copy and exits as after SIGTERM (runtime/comm/process_loss.h); this
  // watch ends what is left as it does on Open MPI 4 (mpirun_watch.cpp).
  c.extraArgs.insert(c.extraArgs.begin(), {"--runtime-options", "recoverable,notifyerrors"});
#endif
  c.tlLaunch = o.launch;
  const std::vector<std::string> job = withoutFlag(withoutFlag(o.launchArgs, "--resume"), "--checkpoint-dir");
  // A fixed placement fits only its process count; `auto` plans for any.
  const bool fixedPlacement = hasFlag(job, "--placement") && flagValue(job, "--placement") != "auto";
  const bool keepPlacement = plan.launch == 0 || plan.processes == o.processes || !fixedPlacement;
  std::vector<std::string>& flags = c.launchFlags;
  flags = keepPlacement ? job : withoutFlag(job, "--placement");
  flags.insert(flags.end(), {"--checkpoint-dir", checkpointDirOf(o), "--recovery-dir", recoveryPathsOf(o).dir,
                             "--collective-timeout", std::to_string(o.hangTimeoutSeconds)});
  if (!plan.resume.empty()) flags.insert(flags.end(), {"--resume", plan.resume});
  return mpirun::argvOf(c);
}

LaunchPlan nextLaunch(const SupervisorOptions& o, const LaunchPlan& lost, const elastic::FailureReport& report,
                      const std::string& kept) {
  LaunchPlan next{lost.launch + 1, std::max(1, report.survivors), {}, kept};
  if (lost.hosts.empty()) return next;
  for (const auto& h : lost.hosts)
    if (std::find(report.lostHosts.begin(), report.lostHosts.end(), h.host) == report.lostHosts.end())
      next.hosts.push_back(h);
  TL_REQUIRE(!next.hosts.empty(), "every host was lost; the last good checkpoint is ", kept);
  int capacity = 0;
  for (const auto& h : next.hosts) capacity += h.count;
  next.processes = std::min(o.processes, capacity);
  return next;
}

}  // namespace tl::run
