// What tl-run is given, and what one launch of the job ends with. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "common/host_slots.h"

namespace tl::run {

struct SupervisorOptions {
  int processes = 0;                 // -np of the first launch
  int maxRestarts = 3;               // failures survived; one more ends the job with an error
  double hangTimeoutSeconds = 60;    // a collective waiting this long on a rank: the rank is lost
  double killGraceSeconds = 20;      // mpirun's odls_base_sigkill_timeout: time to write the copies
  std::vector<HostSlots> hosts;      // mpirun --host (empty: mpirun's default, this machine)
  std::string mpirun = "mpirun";
  std::vector<std::string> mpirunArgs;  // extra mpirun arguments
  std::string launch;                // tl-launch
  std::vector<std::string> launchArgs;  // the job's flags (--output-dir required)
  // A lost rank: the survivors go on in their processes (mpirun --enable-recovery;
  // elastic/recovery/in_place.h), falling back to a restart when that cannot work; false: every
  // loss restarts the job (tl-run --recovery restart). tl-run's command line defaults to true.
  bool inPlace = false;
  // In place: after a recovery, grow the job back in place to the launch's process count (the
  // slots the lost processes held are free again on this host). tl-run --grow-back on|off.
  bool growBack = true;
};

// How one launch ended.
struct LaunchExit {
  int status = 0;            // mpirun's exit status (128 + signal when it was ended)
  bool interrupted = false;  // tl-run itself was interrupted (SIGINT, SIGTERM)
};

}  // namespace tl::run
