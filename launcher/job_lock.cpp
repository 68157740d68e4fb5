#include "launcher/job_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/check.h"
#include "common/files.h"

namespace tl::launcher {
namespace {

std::string readAll(int fd) {
  std::string text;
  char buf[512];
  ssize_t n;
  off_t offset = 0;
  while ((n = ::pread(fd, buf, sizeof buf, offset)) > 0) {
    text.append(buf, size_t(n));
    offset += n;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string describeHolder(const std::string& text) {
  return text.empty() ? "a job that left no name" : text;
}

std::string thisHolder() {
  char when[32] = "?";
  std::time_t now = std::time(nullptr);
  std::tm local{};
  if (::localtime_r(&now, &local)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &local);
  return tl::str("pid ", ::getpid(), " on host ", hostName(), " since ", when);
}

bool sameFile(int fd, const std::string& path) {
  struct stat held, named;
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
         held.st_ino == named.st_ino && held.st_dev == named.st_dev;
}

}  // namespace

JobLock::JobLock(const std::string& dir, const std::string& what)
    : path_(joinPath(dir, kJobLockName)) {
  // A releasing job removes the file before letting go: whoever then holds a lock on the removed
  // file has nothing, and tries again on the new one.
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
      inputError(what, " '", dir, "': cannot create its lock file ", path_, ": ",
                 std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int why = errno;
      const std::string holder = readAll(fd);
      ::close(fd);
      if (why == EWOULDBLOCK) {
        inputError(what, " '", dir, "' is in use by another job (", describeHolder(holder),
                   "; lock ", path_, ")");
      }
      inputError(what, " '", dir, "': cannot lock ", path_, ": ", std::strerror(why));
    }
    if (!sameFile(fd, path_)) {
      ::close(fd);
      continue;
    }
    previousHolder_ = readAll(fd);
    const std::string me = thisHolder() + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != ssize_t(me.size())) {
      const std::string why = std::strerror(errno);
      ::unlink(path_.c_str());
      ::close(fd);
      inputError(what, " '", dir, "': cannot write its lock file ", path_, ": ", why);
    }
    fd_ = fd;
    return;
  }
  inputError(what, " '", dir, "': its lock file ", path_, " keeps being replaced");
}

JobLock::JobLock(JobLock&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      previousHolder_(std::move(other.previousHolder_)) {
  other.fd_ = -1;
}

JobLock& JobLock::operator=(JobLock&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    previousHolder_ = std::move(other.previousHolder_);
    other.fd_ = -1;
  }
  return *this;
}

JobLock::~JobLock() { release(); }

void JobLock::release() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

std::string jobLockHolder(const std::string& dir) {
  const std::string path = joinPath(dir, kJobLockName);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";
  std::string holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
    holder = describeHolder(readAll(fd));
  ::close(fd);
  return holder;
}

}  // namespace tl::launcher
