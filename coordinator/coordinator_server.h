// The node coordinator: serves the protocol of protocol.h on <run-dir>/coordinator.sock and
// pushes the NodeBalancer's decisions to the jobs.
//
// One instance per run directory: the constructor takes an exclusive flock on
// <run-dir>/coordinator.pid for the server's whole life (the kernel drops it when the process
// dies, even by SIGKILL), so a stale socket file left by a killed coordinator is safely
// replaced and two coordinators never serve one directory.
//
// A connection is dropped (and its job leaves) when it closes, sends "leave", sends anything
// malformed (logged with the reason, answered with an "error" message), stops reading its
// assignments, or when the pid it registered no longer exists. One that has not registered
// within registerTimeoutSeconds is closed.
//
// Descriptors are bounded: at most maxConnections connections, fewer when RLIMIT_NOFILE
// leaves less room. At that limit a new connection replaces the oldest one that has not
// registered, or is closed at once when all of them belong to jobs (a client retries later).
// When accept() fails anyway (EMFILE, ENFILE, ENOMEM) the server stops polling the listener
// for a back-off of 50 ms to 1 s instead of spinning on it; such warnings are logged at most
// once per 10 s, with the number held back. With no connection at all for
// idleExitSeconds, run() removes the socket and returns; it first takes the spawn lock of
// ensureCoordinator so a job that is just starting a coordinator is not left with a dead one.
//
// Decisions and rejections go to <run-dir>/coordinator.log.
//
// Threading: run() is a poll() loop on the calling thread and owns all state; requestStop() is
// the only method safe from other threads (and from a signal handler: it writes a pipe).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "coordinator/node_balancer.h"
#include "coordinator/protocol.h"
#include "coordinator/unix_socket.h"

namespace spdlog {
class logger;
}

namespace tl::coordinator {

struct CoordinatorOptions {
  std::string runDir;
  BalancerOptions balancer;
  double idleExitSeconds = 30;  // 0: never exit on idle
  double livenessCheckSeconds = 1;
  double registerTimeoutSeconds = 10;  // a connection that has not registered by then is closed
  int maxConnections = 1024;           // lowered further to fit RLIMIT_NOFILE
};

class CoordinatorServer {
 public:
  // Creates or checks the run directory (openRunDir), takes the instance lock, opens the log
  // (neither through a symbolic link), replaces a stale socket and listens. When the lock is
  // held: InputError at once if its holder listens, else waits up to 5 s for it (a
  // coordinator shutting down). InputError naming the folder or file for an untrusted run
  // directory or file, and when the socket cannot be created.
  explicit CoordinatorServer(const CoordinatorOptions& options);
  ~CoordinatorServer();
  CoordinatorServer(const CoordinatorServer&) = delete;
  CoordinatorServer& operator=(const CoordinatorServer&) = delete;

  // Serves until requestStop() or the idle timeout; removes the socket file on the way out.
  void run();
  void requestStop();

  const std::string& socketFile() const { return socketFile_; }

 private:
  struct Connection {
    Fd fd;
    LineBuffer in;
    std::string out;
    std::string jobId;  // empty until registered
    int64_t pid = 0;
    std::chrono::steady_clock::time_point accepted;
  };

  // Lets a warning that could repeat every poll turn through once per interval.
  class WarningThrottle {
   public:
    // True when this occurrence is to be logged; `heldBack` then says how many were not.
    bool allow(int64_t& heldBack);

   private:
    std::chrono::steady_clock::time_point last_{};
    int64_t held_ = 0;
  };

  void acceptAll();
  void pauseAccepting(int error);
  bool evictOldestUnregistered();
  void closeUnregistered();
  void readFrom(int id, Connection& connection);
  void handleLine(int id, Connection& connection, const std::string& line);
  void flush(int id, Connection& connection);
  void drop(int id, const std::string& why);
  void reject(int id, const std::string& why, const std::string& line);
  void apply(const Decision& decision);
  void checkLiveness();
  std::string name(int id) const;

  CoordinatorOptions options_;
  std::string socketFile_;
  std::shared_ptr<spdlog::logger> log_;
  Fd runDirFd_;  // the checked run directory its files are opened in
  Fd instanceLock_;
  Fd listener_;
  Fd stopRead_, stopWrite_;
  NodeBalancer balancer_;
  std::map<int, Connection> connections_;
  std::map<int, std::string> dropped_;  // connections to remove after this poll round
  int nextId_ = 1;
  size_t connectionLimit_ = 0;
  std::chrono::steady_clock::time_point acceptPausedUntil_{};
  double acceptBackoffSeconds_ = 0;
  WarningThrottle acceptWarnings_, limitWarnings_, timeoutNotes_;
};

}  // namespace tl::coordinator
