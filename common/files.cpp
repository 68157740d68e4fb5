#include "common/files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/check.h"

namespace tl {
namespace {

std::string errnoText() { return std::strerror(errno); }

void writeAll(int fd, std::string_view bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      inputError("cannot write '", path, "': ", errnoText());
    }
    done += size_t(n);
  }
}

// ".<name>.tmp." for the temporaries of one file; "." for all of them.
std::string temporaryPrefix(const std::string& name) {
  return name.empty() ? "." : "." + name + ".tmp.";
}

struct TemporaryWriter {
  pid_t pid = 0;
  std::string host;
};

// The writer named by a temporary's file name ".<name>.tmp.<pid>@<host>.XXXXXX"; nothing when
// the name is not of that form.
std::optional<TemporaryWriter> temporaryWriter(const std::string& entry) {
  const size_t tmp = entry.rfind(".tmp.");
  const size_t suffix = entry.rfind('.');
  if (tmp == std::string::npos || suffix <= tmp + 4 || entry.size() - suffix != 7)
    return std::nullopt;
  const std::string writer = entry.substr(tmp + 5, suffix - tmp - 5);  // "<pid>@<host>"
  const size_t at = writer.find('@');
  if (at == 0 || at == std::string::npos || at + 1 == writer.size()) return std::nullopt;
  const std::string pid = writer.substr(0, at);
  if (pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return TemporaryWriter{pid_t(std::stol(pid)), writer.substr(at + 1)};
}

// True when process `pid` of this host has ended: no such process, or one that has died and
// waits only for its parent to collect its exit status (a zombie still answers kill(pid, 0),
// and an orphan under an init that never reaps stays one for good).
bool processHasEnded(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;  // EPERM: alive, someone else's
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t nameEnd = stat.rfind(')');  // "<pid> (<name>) <state> ...": names may hold ')'
  if (!in || nameEnd == std::string::npos || nameEnd + 2 >= stat.size()) return false;
  const char state = stat[nameEnd + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

std::string joinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

void writeFileAtomic(const std::string& path, std::string_view bytes) {
  std::filesystem::path p(path);
  std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  const std::string name = p.filename().string();
  removeStaleTemporaries(dir, name);
  std::string tmpl = joinPath(
      dir, temporaryPrefix(name) + std::to_string(::getpid()) + "@" + hostName() + ".XXXXXX");
  int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) inputError("cannot write '", path, "': ", errnoText());
  // Held until the temporary is renamed or removed: while it is, nobody takes it for a leftover.
  ::flock(fd, LOCK_EX);
  try {
    writeAll(fd, bytes, path);
    if (::fsync(fd) != 0) inputError("cannot fsync '", path, "': ", errnoText());
  } catch (...) {
    ::unlink(tmpl.c_str());
    ::close(fd);
    throw;
  }
  ::fchmod(fd, 0644);
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    std::string why = errnoText();
    ::unlink(tmpl.c_str());
    ::close(fd);
    inputError("cannot rename into '", path, "': ", why);
  }
  ::close(fd);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string hostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

std::vector<std::string> removeStaleTemporaries(const std::string& dir, const std::string& name) {
  std::vector<std::string> removed;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return removed;  // a folder that is not there has nothing to clean
  const std::string prefix = temporaryPrefix(name);  // "." alone when name is empty
  const std::string host = hostName();
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string entry = it->path().filename().string();
    if (entry.rfind(prefix, 0) != 0) continue;
    std::optional<TemporaryWriter> writer = temporaryWriter(entry);
    if (!writer || writer->host != host || writer->pid == ::getpid()) continue;
    if (!processHasEnded(writer->pid)) continue;  // alive, or not ours to see
    const std::string path = it->path().string();
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    struct stat held, named;
    // Not locked, and still the file of that name: nobody is writing it.
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &held) == 0 &&
        ::lstat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev && ::unlink(path.c_str()) == 0) {
      removed.push_back(path);
    }
    ::close(fd);
  }
  return removed;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) inputError("cannot open '", path, "': ", errnoText());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) inputError("cannot read '", path, "': ", errnoText());
  return ss.str();
}

bool fileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void requireRegularFile(const std::string& what, const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) inputError(what, " '", path, "' is missing");
    inputError(what, " '", path, "' cannot be read: ", errnoText());
  }
  if (S_ISDIR(st.st_mode)) inputError(what, " '", path, "' is not a regular file (a folder)");
  if (!S_ISREG(st.st_mode)) inputError(what, " '", path, "' is not a regular file");
}

void ensureWritableDir(const std::string& dir, const std::string& what) {
  TL_REQUIRE(!dir.empty(), what, " is empty");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) inputError(what, " '", dir, "' is not writable: ", ec.message());
  if (!std::filesystem::is_directory(dir)) inputError(what, " '", dir, "' is not a directory");
  std::string probe = joinPath(dir, ".tl-write-probe.XXXXXX");
  int fd = ::mkstemp(probe.data());
  if (fd < 0) inputError(what, " '", dir, "' is not writable: ", errnoText());
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace tl
