// tl-run's launches as data: the command line of each and how the next one is sized after a
// loss. Pure functions of the options, the plan and the failure report (unit-tested).
#pragma once

#include <string>
#include <vector>

#include "elastic/recovery/recovery_files.h"
#include "tools/run/supervisor_options.h"

namespace tl::run {

// One launch of the job.
struct LaunchPlan {
  int launch = 0;               // 0: the first
  int processes = 0;            // mpirun -np
  std::vector<HostSlots> hosts;  // mpirun --host (empty: mpirun's default)
  std::string resume;           // --resume (empty: as the job's flags say)
};

// The first launch: the options' size, hosts and --resume.
LaunchPlan firstLaunch(const SupervisorOptions& o);

// `mpirun [--host h:n,..] -np P --mca odls_base_sigkill_timeout G <mpirunArgs> <tl-launch> <job
// flags> --checkpoint-dir C --recovery-dir R --collective-timeout T [--resume S]`
// (tools/mpirun/mpirun_command.h). A fixed
// --placement fits only its process count: a relaunch on fewer processes leaves it out.
std::vector<std::string> launchCommand(const SupervisorOptions& o, const LaunchPlan& plan);

// The launch after a loss, from the copy kept at `kept`: the processes that survived, or,
// given hosts, what the hosts that remain hold (up to the first launch's size). InputError
// when every host was lost.
LaunchPlan nextLaunch(const SupervisorOptions& o, const LaunchPlan& lost, const elastic::FailureReport& report,
                      const std::string& kept);

// Where this run's files go, from the job's flags.
std::string outputDirOf(const SupervisorOptions& o);
std::string checkpointDirOf(const SupervisorOptions& o);
elastic::RecoveryPaths recoveryPathsOf(const SupervisorOptions& o);
// InputError for options tl-run cannot run with (no --np, no --output-dir, flags tl-run sets).
void checkOptions(const SupervisorOptions& o);

}  // namespace tl::run
