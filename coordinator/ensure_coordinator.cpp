#include "coordinator/ensure_coordinator.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/check.h"
#include "coordinator/unix_socket.h"

extern char** environ;

namespace tl::coordinator {

namespace {

using Clock = std::chrono::steady_clock;

// A coordinator whose backlog is full (stopped, or out of descriptors) still counts: a second
// one could not take the run directory from it, and the job must not wait for either.
bool listening(const std::string& runDir) { return someoneListens(socketPath(runDir)); }

// Starts `sh -c '"$0" "$@" &' binary --run-dir DIR ...` and reaps the shell, which exits as
// soon as the coordinator is forked.
void spawnDetached(const std::string& runDir, const std::string& binary,
                   const std::vector<std::string>& extraArgs, int logFd) {
  std::vector<std::string> args{"/bin/sh", "-c", "\"$0\" \"$@\" &", binary, "--run-dir", runDir};
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, logFd, 1);  // opened without following a link
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  // New session: the job's Ctrl-C or its process group's signals do not reach the coordinator.
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  pid_t shell = 0;
  int rc = posix_spawn(&shell, "/bin/sh", &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  TL_REQUIRE(rc == 0, "cannot start '", binary, "': ", std::strerror(rc));
  // ECHILD when the caller ignores SIGCHLD: then there is nothing to reap.
  while (::waitpid(shell, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

bool ensureCoordinator(const std::string& runDir, const std::string& coordinatorBinary,
                       const EnsureCoordinatorOptions& options) {
  Fd dir = openRunDir(runDir);
  if (listening(runDir)) return false;
  TL_REQUIRE(::access(coordinatorBinary.c_str(), X_OK) == 0, "coordinator binary '",
             coordinatorBinary, "' is not executable: ", std::strerror(errno));

  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.timeoutSeconds));
  const std::string lockFile = spawnLockPath(runDir);
  // Close-on-exec (as every file openRunDirFile opens) matters: a coordinator that inherited
  // this descriptor would hold the lock.
  Fd lock = openRunDirFile(dir.get(), runDir, kSpawnLockFile, O_RDWR);
  while (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    TL_REQUIRE(errno == EWOULDBLOCK || errno == EINTR, "cannot lock '", lockFile,
               "': ", std::strerror(errno));
    if (Clock::now() > deadline) {
      throw TimeoutError(str("could not lock '", lockFile, "' within ", options.timeoutSeconds,
                             " s: another process is starting the coordinator and hangs"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (listening(runDir)) return false;  // started by whoever held the lock before us

  Fd log = openRunDirFile(dir.get(), runDir, kLogFile, O_WRONLY | O_APPEND);
  spawnDetached(runDir, coordinatorBinary, options.extraArgs, log.get());
  log.reset();
  while (!listening(runDir)) {
    if (Clock::now() > deadline) {
      throw TimeoutError(str("tl-coordinator did not start listening on '", socketPath(runDir),
                             "' within ", options.timeoutSeconds, " s; see ", logPath(runDir)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace tl::coordinator
