// Starting the node coordinator on demand.
//
// The first job on a node (or tl-submit) calls ensureCoordinator before it connects. Two jobs
// may do so at the same moment: the check and the start happen under an exclusive flock on
// <run-dir>/coordinator.lock, so exactly one coordinator is started; the other caller finds it
// listening when it gets the lock.
//
// The coordinator is started detached from the caller: through /bin/sh in the background, in
// a new session (no controlling terminal, reparented to init, so no zombie is left in the
// job), with stdin from /dev/null, stdout and stderr appended to <run-dir>/coordinator.log,
// and none of the caller's descriptors. The run directory is checked and its files opened as
// openRunDir and openRunDirFile do (unix_socket.h): never through a symbolic link. posix_spawn is
// used rather than fork, because a job process may be an MPI rank with many threads and registered
// memory.
//
// Threading: callable from any thread; it blocks for at most `timeoutSeconds`.
#pragma once

#include <string>
#include <vector>

namespace tl::coordinator {

struct EnsureCoordinatorOptions {
  double timeoutSeconds = 10;          // for the lock and for the new coordinator to listen
  std::vector<std::string> extraArgs;  // appended after --run-dir DIR
};

// Returns once a coordinator accepts connections on <runDir>/coordinator.sock; true when this
// call started it. InputError when the binary is not executable or the run directory (or a
// file in it) is unusable or untrusted; tl::TimeoutError naming the log file when no coordinator
// listens in time.
bool ensureCoordinator(const std::string& runDir, const std::string& coordinatorBinary,
                       const EnsureCoordinatorOptions& options = {});

}  // namespace tl::coordinator
