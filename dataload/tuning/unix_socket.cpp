#include "dataload/tuning/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <thread>

#include "common/check.h"
#include "common/files.h"

namespace tl::tuning {

namespace {

bool fillAddress(const std::string& path, sockaddr_un& address) {
  std::memset(&address, 0, sizeof(address));
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return true;
}

}  // namespace

std::string socketPath(const std::string& runDir) { return joinPath(runDir, "coordinator.sock"); }
std::string spawnLockPath(const std::string& runDir) {
  return joinPath(runDir, "coordinator.lock");
}
std::string instanceLockPath(const std::string& runDir) {
  return joinPath(runDir, "coordinator.pid");
}
std::string logPath(const std::string& runDir) { return joinPath(runDir, "coordinator.log"); }

std::string defaultRunDir() { return "/tmp/tl-coordinator-" + std::to_string(getuid()); }

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

void prepareRunDir(const std::string& runDir) {
  TL_REQUIRE(!runDir.empty(), "coordinator run directory is empty");
  sockaddr_un address;
  TL_REQUIRE(fillAddress(socketPath(runDir), address), "coordinator run directory '", runDir,
             "' is too long: its socket path must be shorter than ", sizeof(address.sun_path),
             " bytes");
  if (::mkdir(runDir.c_str(), 0700) != 0 && errno != EEXIST) {
    // Parents may be missing; ensureWritableDir creates them and explains a failure.
    ensureWritableDir(runDir, "coordinator run directory");
    ::chmod(runDir.c_str(), 0700);
  }
  struct stat info;
  TL_REQUIRE(::stat(runDir.c_str(), &info) == 0 && S_ISDIR(info.st_mode),
             "coordinator run directory '", runDir, "' is not a directory");
  // Jobs trust what the socket in this directory tells them: it must be ours.
  TL_REQUIRE(info.st_uid == ::getuid(), "coordinator run directory '", runDir,
             "' belongs to another user (uid ", info.st_uid, ")");
}

UniqueFd connectUnix(const std::string& path, double timeoutSeconds) {
  sockaddr_un address;
  if (!fillAddress(path, address)) {
    errno = ENAMETOOLONG;
    return UniqueFd();
  }
  // Non-blocking: a blocking connect() to a listener whose backlog is full waits until it
  // accepts, which a stopped coordinator never does. On Linux a Unix-socket connect either
  // completes at once or fails with EAGAIN (backlog full); it never returns EINPROGRESS.
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
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
  UniqueFd fd = connectUnix(path, timeoutSeconds);
  return fd.valid() || errno == EAGAIN;
}

UniqueFd listenUnix(const std::string& path) {
  sockaddr_un address;
  TL_REQUIRE(fillAddress(path, address), "socket path '", path, "' is too long");
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
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

}  // namespace tl::tuning
