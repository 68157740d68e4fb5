// How tl-submit and tl-profile turn a job into an `mpirun ... tl-launch ...` command line
// (the argument order is tools/mpirun/mpirun_command.h's).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/submit/job_table.h"

namespace tl::submit {

struct MpirunOptions {
  std::string mpirun = "mpirun";
  std::string tlLaunch;         // path of tl-launch
  bool oversubscribe = false;   // --oversubscribe: more processes than cores
  bool allowRunAsRoot = false;  // --allow-run-as-root (set when running as root)
  // Open MPI binds each rank to one core when a job has 1 or 2 processes; the loader threads
  // of that rank would then share that core. "none" lets them use the whole machine (or the
  // affinity mpirun itself was started with).
  std::string bindTo = "none";
  int portRange = 32;  // TCP ports per job (btl_tcp_port_range_v4)
  std::vector<std::string> extraMpiArgs;
  std::vector<std::string> autoWorkersFlags;  // added to the tl-launch flags of workers=auto jobs
};

// The tl-launch flags of a job (everything after the tl-launch path).
std::vector<std::string> tlLaunchFlags(const SubmitJob& job);

// `mpirun [--oversubscribe] [--allow-run-as-root] [--bind-to X] -np P [--mca ... port range]
//  [-x CUDA_VISIBLE_DEVICES] <tl-launch> <flags>`.
std::vector<std::string> mpirunArgv(const MpirunOptions& options, int processes, int port,
                                    bool exportCudaDevices,
                                    const std::vector<std::string>& launchFlags);

// The whole command of one job, plus the environment it needs set.
struct JobCommand {
  std::vector<std::string> argv;
  std::map<std::string, std::string> setEnv;
};
JobCommand jobCommand(const MpirunOptions& options, const SubmitJob& job);

// The tl-launch flags of a job as jobCommand passes them (workers=auto flags included).
std::vector<std::string> jobLaunchFlags(const MpirunOptions& options, const SubmitJob& job);

// mpirun options that fit this machine: tl-launch next to the running executable unless given,
// --allow-run-as-root when the effective user is root.
MpirunOptions defaultMpirunOptions();

}  // namespace tl::submit
