// Starting and reaping the mpirun processes tl-submit and tl-profile run.
//
// A child runs in its own process group, so a Ctrl-C on the terminal reaches tl-submit alone;
// tl-submit decides what the jobs get (it forwards the signal), and mpirun never sees the same
// Ctrl-C twice (a second SIGINT makes mpirun abort without cleaning up).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace tl::submit {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::map<std::string, std::string>
      setEnv;           // added to (or replacing in) the inherited environment
  std::string logPath;  // stdout and stderr go here (created, truncated)
};

// Starts the child. Throws InputError when the log cannot be created; a program that cannot
// be executed makes the child exit with status 127 after writing why into the log.
pid_t startChild(const ChildSpec& spec);

struct ChildExit {
  bool exited = false;  // false: still running (only from pollChild)
  int exitCode = 0;     // the exit status, or 128 + signal when a signal killed it
  int signal = 0;       // the signal that killed it, 0 when it exited
};

// Non-blocking: `exited` stays false while the child runs.
ChildExit pollChild(pid_t pid);
// Blocks until the child ends.
ChildExit waitChild(pid_t pid);

// Shell-like rendering of a command line for logs and --dry-run.
std::string shellQuoted(const std::vector<std::string>& argv);

// The folder holding the running executable (from /proc/self/exe).
std::string executableDir();

}  // namespace tl::submit
