// Small POSIX helpers for the coordinator's Unix-domain socket and its run directory.
//
// Every descriptor is close-on-exec, so a coordinator spawned from a job does not inherit the
// job's sockets. Sends use MSG_NOSIGNAL: a peer that went away is an error code, not SIGPIPE.
// Free functions and a move-only descriptor owner; no shared state.
#pragma once

#include <string>
#include <string_view>

namespace tl::tuning {

// The files of a coordinator's run directory.
std::string socketPath(const std::string& runDir);        // coordinator.sock
std::string spawnLockPath(const std::string& runDir);     // coordinator.lock (ensureCoordinator)
std::string instanceLockPath(const std::string& runDir);  // coordinator.pid (held while alive)
std::string logPath(const std::string& runDir);           // coordinator.log
// /tmp/tl-coordinator-<uid>
std::string defaultRunDir();

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Creates the run directory (mode 0700) if needed. InputError naming it when that fails or
// when the socket path would not fit a sockaddr_un.
void prepareRunDir(const std::string& runDir);

// A connected (blocking) stream socket, or an invalid UniqueFd with errno set (ENOENT: no
// socket file, ECONNREFUSED: a stale socket file, nothing listens, EAGAIN: its listen backlog
// stayed full for `timeoutSeconds`, so a process listens but does not accept: stopped, or out of
// descriptors). Never waits longer than `timeoutSeconds`.
UniqueFd connectUnix(const std::string& path, double timeoutSeconds = 1);

// True when a process listens at `path`, also one that does not accept (connectUnix's EAGAIN).
bool someoneListens(const std::string& path, double timeoutSeconds = 0.2);

// Binds and listens at `path` (which must not exist). InputError naming the path on failure.
UniqueFd listenUnix(const std::string& path);

void setNonBlocking(int fd);

// Blocking send of all bytes with MSG_NOSIGNAL; false when the peer is gone.
bool sendAll(int fd, std::string_view bytes);

}  // namespace tl::tuning
