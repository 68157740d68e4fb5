#include "coordinator/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include "common/check.h"
#include "common/files.h"

namespace tl::coordinator {

namespace {

bool fillAddress(const std::string& path, sockaddr_un& address) {
  std::memset(&address, 0, sizeof(address));
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return true;
}

std::string octalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", unsigned(mode & 07777));
  return text;
}

}  // namespace

std::string socketPath(const std::string& runDir) { return joinPath(runDir, kSocketFile); }
std::string spawnLockPath(const std::string& runDir) { return joinPath(runDir, kSpawnLockFile); }
std::string instanceLockPath(const std::string& runDir) {
  return joinPath(runDir, kInstanceLockFile);
}
std::string logPath(const std::string& runDir) { return joinPath(runDir, kLogFile); }

std::string defaultRunDir() { return "/tmp/tl-coordinator-" + std::to_string(getuid()); }

Fd openRunDir(const std::string& runDir, bool create) {
  TL_REQUIRE(!runDir.empty(), "coordinator run directory is empty");
  sockaddr_un address;
  TL_REQUIRE(fillAddress(socketPath(runDir), address), "coordinator run directory '", runDir,
             "' is too long: its socket path must be shorter than ", sizeof(address.sun_path),
             " bytes");
  // "dir/" would resolve a symbolic link "dir" even with O_NOFOLLOW.
  std::string dir = runDir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (create) {
    int rc = ::mkdir(dir.c_str(), 0700);
    if (rc != 0 && errno == ENOENT) {
      // Parents may be missing; ensureWritableDir creates them and explains a failure.
      std::string parent = std::filesystem::path(dir).parent_path().string();
      if (!parent.empty()) ensureWritableDir(parent, "parent of the coordinator run directory");
      rc = ::mkdir(dir.c_str(), 0700);
    }
    if (rc != 0 && errno != EEXIST) {
      inputError("cannot create coordinator run directory '", runDir, "': ", std::strerror(errno));
    }
  }
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    int error = errno;
    struct stat link;
    if (::lstat(dir.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      inputError("coordinator run directory '", runDir,
                 "' is a symbolic link; refusing it (use the folder itself)");
    }
    if (error == ENOTDIR) inputError("coordinator run directory '", runDir, "' is not a directory");
    inputError("cannot open coordinator run directory '", runDir, "': ", std::strerror(error));
  }
  // Checked on the open descriptor: what is checked is what the files are opened in.
  struct stat info;
  TL_CHECK(::fstat(fd.get(), &info) == 0, std::strerror(errno));
  // Jobs trust what the socket in this directory tells them: it must be ours alone.
  TL_REQUIRE(info.st_uid == ::geteuid(), "coordinator run directory '", runDir, "' belongs to uid ",
             info.st_uid, ", not to this user (uid ", ::geteuid(), ")");
  TL_REQUIRE((info.st_mode & (S_IWGRP | S_IWOTH)) == 0, "coordinator run directory '", runDir,
             "' is writable by group or others (mode ", octalMode(info.st_mode),
             "); make it private (chmod 700) or use another one");
  return fd;
}

void prepareRunDir(const std::string& runDir) { openRunDir(runDir); }

Fd openRunDirFile(int dirFd, const std::string& runDir, const std::string& name, int flags) {
  const std::string path = joinPath(runDir, name);
  // O_NONBLOCK: a planted FIFO must not block the open.
  Fd fd(
      ::openat(dirFd, name.c_str(), flags | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    if (errno == ELOOP) inputError("'", path, "' is a symbolic link; refusing to open it");
    inputError("cannot open '", path, "': ", std::strerror(errno));
  }
  struct stat info;
  TL_CHECK(::fstat(fd.get(), &info) == 0, std::strerror(errno));
  TL_REQUIRE(S_ISREG(info.st_mode), "'", path, "' is not a regular file");
  TL_REQUIRE(info.st_uid == ::geteuid(), "'", path, "' belongs to uid ", info.st_uid,
             ", not to this user (uid ", ::geteuid(), ")");
  int status = ::fcntl(fd.get(), F_GETFL, 0);
  TL_CHECK(status >= 0 && ::fcntl(fd.get(), F_SETFL, status & ~O_NONBLOCK) == 0,
           std::strerror(errno));
  return fd;
}

Fd connectUnix(const std::string& path, double timeoutSeconds) {
  sockaddr_un address;
  if (!fillAddress(path, address)) {
    errno = ENAMETOOLONG;
    return Fd();
  }
  // Non-blocking: a blocking connect() to a listener whose backlog is full waits until it
  // accepts, which a stopped coordinator never does. On Linux a Unix-socket connect either
  // completes at once or fails with EAGAIN (backlog full); it never returns EINPROGRESS.
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return fd;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeoutSeconds));
  for (;;) {
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) break;
    if (errno == EINTR) continue;
    if (errno != EAGAIN || std::chrono::steady_clock::now() >= deadline) {
      int saved = errno;
      fd.reset();
      errno = saved;
      return fd;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int flags = ::fcntl(fd.get(), F_GETFL, 0);
  TL_CHECK(flags >= 0 && ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) == 0,
           std::strerror(errno));
  return fd;
}

bool someoneListens(const std::string& path, double timeoutSeconds) {
  Fd fd = connectUnix(path, timeoutSeconds);
  return fd.valid() || errno == EAGAIN;
}

Fd listenUnix(const std::string& path) {
  sockaddr_un address;
  TL_REQUIRE(fillAddress(path, address), "socket path '", path, "' is too long");
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  TL_REQUIRE(fd.valid(), "cannot create a socket: ", std::strerror(errno));
  TL_REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0,
             "cannot bind '", path, "': ", std::strerror(errno));
  ::chmod(path.c_str(), 0600);
  TL_REQUIRE(::listen(fd.get(), 128) == 0, "cannot listen on '", path, "': ", std::strerror(errno));
  return fd;
}

void setNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  TL_CHECK(flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0, std::strerror(errno));
}

bool sendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(size_t(n));
  }
  return true;
}

}  // namespace tl::coordinator
