// tl-launch --check: everything a launch checks before its first step, without training and
// without MPI — flags (parsed exactly as a launch parses them), the job's definition and its
// placement on the processes it will have, the device, the data set, the model, the length
// plan and every output path. tl-submit and tl-profile run it for each job before starting
// anything, so a job that cannot start is found in a second, with tl-launch's own message.
#pragma once

namespace tl::launcher {

// True when argv asks for --check; main() then runs runCheck instead of a job.
bool wantsCheck(int argc, char** argv);

// Prints "ok" and returns 0, or prints "tl-launch: error: <message>" and returns 2 (1 for an
// internal error). Under mpirun each rank checks; rank 0 alone says "ok".
int runCheck(int argc, char** argv);

}  // namespace tl::launcher
