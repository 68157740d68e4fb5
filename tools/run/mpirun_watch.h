// tl-run's real launch step: runs `mpirun ... tl-launch ...` and waits for it, ending it as
// soon as the job is down once its ranks have started writing their copies (mpirun's daemon
// would sleep its kill grace twice). Torch-free; Linux (/proc).
#pragma once

#include <string>
#include <vector>

#include "elastic/recovery/recovery_files.h"
#include "tools/run/supervisor_options.h"

namespace tl::run {

// SIGINT and SIGTERM to tl-run from now on end the running launch and mark its exit interrupted.
void watchInterrupts();

// Starts `argv` and waits as above. InputError when argv[0] cannot be started.
LaunchExit runMpirun(const std::vector<std::string>& argv, const SupervisorOptions& o,
                     const elastic::RecoveryPaths& paths, int processes);

}  // namespace tl::run
