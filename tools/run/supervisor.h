// tl-run: runs `mpirun ... tl-launch ...` and, when a rank is lost (killed, crashed, hung), starts
// it again on the processes that remain from the copy of the job the survivors wrote
// (elastic/recovery/recovery_guard.h; the files they share: elastic/recovery/recovery_files.h), keeping N, the global batch and the bits. Torch-free.
// docs/design.md ("Surviving a lost rank").
#pragma once

#include <string>
#include <vector>

#include "elastic/recovery/recovery_files.h"

namespace tl::run {

struct HostSlots {
  std::string host;
  int slots = 1;
};

struct SupervisorOptions {
  int processes = 0;                 // -np of the first launch
  int maxRestarts = 3;               // failures survived; one more ends the job with an error
  double hangTimeoutSeconds = 60;    // a collective waiting this long on a rank: the rank is lost
  double killGraceSeconds = 20;      // mpirun's odls_base_sigkill_timeout: time to write the copies
  std::vector<HostSlots> hosts;      // empty: mpirun's default (this machine)
  std::string mpirun = "mpirun";
  std::vector<std::string> mpirunArgs;  // extra arguments, before -np
  std::string launch;                // tl-launch
  std::vector<std::string> launchArgs;  // the job's flags (--output-dir required)
};

// The whole supervised run; returns the exit status (0: the job finished).
int supervise(const SupervisorOptions& options);

}  // namespace tl::run
