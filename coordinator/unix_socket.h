// Small POSIX helpers for the coordinator's Unix-domain socket and its run directory.
//
// Every descriptor is close-on-exec, so a coordinator spawned from a job does not inherit the
// job's sockets. Sends use MSG_NOSIGNAL: a peer that went away is an error code, not SIGPIPE.
// Free functions and a move-only descriptor owner; no shared state.
//
// The run directory is trusted only when no other user can change what is in it: it must be a
// real directory (not a symbolic link), owned by this user and not writable by group or others.
// Its files are opened relative to the directory's descriptor with O_NOFOLLOW, so a symbolic
// link planted there (while it was writable, or where fs.protected_symlinks=0) is refused
// rather than followed to a file the coordinator must not touch.
#pragma once

#include <string>
#include <string_view>

#include "common/fd.h"

namespace tl::coordinator {

// The files of a coordinator's run directory.
inline constexpr const char* kSocketFile = "coordinator.sock";
inline constexpr const char* kSpawnLockFile = "coordinator.lock";    // ensureCoordinator
inline constexpr const char* kInstanceLockFile = "coordinator.pid";  // held while alive
inline constexpr const char* kLogFile = "coordinator.log";
std::string socketPath(const std::string& runDir);
std::string spawnLockPath(const std::string& runDir);
std::string instanceLockPath(const std::string& runDir);
std::string logPath(const std::string& runDir);
// /tmp/tl-coordinator-<uid>
std::string defaultRunDir();

// Opens the run directory, creating it (mode 0700, and its parents) first when `create` is
// set. InputError naming it when that fails, when the socket path would not fit a sockaddr_un,
// or when it is not to be trusted: a symbolic link, not a directory, owned by another user, or
// writable by group or others.
Fd openRunDir(const std::string& runDir, bool create = true);
// openRunDir, closing the descriptor.
void prepareRunDir(const std::string& runDir);

// Opens (creating it with mode 0600) the file `name` of the run directory open as `dirFd`,
// never through a symbolic link. `flags` are open(2)'s access flags (O_RDWR, O_WRONLY |
// O_APPEND). InputError naming <runDir>/<name> when it is a symbolic link, not a regular file,
// owned by another user, or cannot be opened.
Fd openRunDirFile(int dirFd, const std::string& runDir, const std::string& name, int flags);

// A connected (blocking) stream socket, or an invalid Fd with errno set (ENOENT: no
// socket file, ECONNREFUSED: a stale socket file, nothing listens, EAGAIN: its listen backlog
// stayed full for `timeoutSeconds`, so a process listens but does not accept: stopped, or out of
// descriptors). Never waits longer than `timeoutSeconds`.
Fd connectUnix(const std::string& path, double timeoutSeconds = 1);

// True when a process listens at `path`, also one that does not accept (connectUnix's EAGAIN).
bool someoneListens(const std::string& path, double timeoutSeconds = 0.2);

// Binds and listens at `path` (which must not exist). InputError naming the path on failure.
Fd listenUnix(const std::string& path);

void setNonBlocking(int fd);

// Blocking send of all bytes with MSG_NOSIGNAL; false when the peer is gone.
bool sendAll(int fd, std::string_view bytes);

}  // namespace tl::coordinator
