// Asking tl-launch itself whether a job can start (`tl-launch --check`), before tl-submit or
// tl-profile start anything, and finding the error line in what a failed job printed.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tl::submit {

struct LaunchCheck {
  bool ok = false;
  std::string error;  // tl-launch's message when not ok (without "tl-launch: error: ")
};

// Runs `<tlLaunch> --check --check-processes <processes> <launchFlags>` with `setEnv` added to
// the environment, without mpirun, and waits for it (a second or so: it opens the data set and
// builds the model, but trains nothing).
LaunchCheck checkWithTlLaunch(const std::string& tlLaunch, int processes,
                              const std::vector<std::string>& launchFlags,
                              const std::map<std::string, std::string>& setEnv = {});

// The last "<program>: error: ..." line of a tool's output (the whole line); "" when none.
std::string errorLineOf(const std::string& output);

// errorLineOf over the end of the log file at `path` ("" when it cannot be read).
std::string errorLineOfLog(const std::string& path);

}  // namespace tl::submit
