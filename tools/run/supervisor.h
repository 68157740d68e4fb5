// tl-run: runs `mpirun ... tl-launch ...` and, when a rank is lost (killed, crashed, hung), starts
// it again on the processes that remain from the copy of the job the survivors wrote
// (elastic/recovery/recovery_guard.h; the files they share: elastic/recovery/recovery_files.h),
// keeping N, the global batch and the bits. Torch-free. docs/design/recovery.md.
//
// supervise() is a loop over launches: each launch step (mpirun for real, a fake in tests)
// ends with an Outcome, and each outcome has one handler. The command line and the size of
// the next launch are functions (tools/run/relaunch.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tools/run/relaunch.h"
#include "tools/run/supervisor_options.h"

namespace tl::run {

enum class Outcome {
  Finished,             // mpirun exited 0
  Interrupted,          // tl-run was told to stop: no restart
  BadInput,             // tl-launch refused its flags or files (exit status 2), no copy
  LostBeforeFirstStep,  // no copy and no step logged: nothing lost, the same start again
  LostWithoutCopy,      // it made progress, but no process left a copy of the job
  Lost,                 // lost with copies: relaunch from the newest on what remains
};
const char* outcomeName(Outcome o);

// `copies`: the lost launch left complete copies; `progressed`: it logged a step of its own.
Outcome classify(const LaunchExit& exit, bool copies, bool progressed);

// Runs one launch (its command line, its plan) to its end.
using LaunchStep = std::function<LaunchExit(const std::vector<std::string>& argv, const LaunchPlan& plan)>;

// The whole supervised run under real mpirun; returns the exit status (0: the job finished).
int supervise(const SupervisorOptions& options);
// The same with `launch` in mpirun's place.
int supervise(const SupervisorOptions& options, const LaunchStep& launch);

}  // namespace tl::run
