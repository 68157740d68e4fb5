// The one builder of `mpirun ... tl-launch ...` command lines: tl-submit and tl-profile
// (tools/submit/mpirun_command.h), tl-sched (tools/sched/real/real_plan.h) and tl-run
// (tools/run/relaunch.h) say what they want; the order of the arguments is spelt here once.
// Torch-free.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/host_slots.h"

namespace tl::mpirun {

struct LaunchCommand {
  std::string mpirun = "mpirun";
  std::vector<HostSlots> hosts;  // --host h:n,.. (empty: mpirun's default)
  bool oversubscribe = false;    // --oversubscribe: more processes than cores
  bool allowRunAsRoot = false;   // --allow-run-as-root
  std::string bindTo;            // --bind-to X (empty: mpirun's default)
  int processes = 1;             // -np
  std::vector<std::pair<std::string, std::string>> mca;  // --mca NAME VALUE
  std::vector<std::string> exportEnv;                     // -x NAME
  std::vector<std::string> extraArgs;  // the user's own mpirun arguments, last before tl-launch
  std::string tlLaunch = "tl-launch";
  std::vector<std::string> launchFlags;
};

// `mpirun [--host ..] [--oversubscribe] [--allow-run-as-root] [--bind-to X] -np P [--mca N V]..
//  [-x NAME].. <extraArgs> <tl-launch> <launchFlags>`.
std::vector<std::string> argvOf(const LaunchCommand& c);

}  // namespace tl::mpirun
