#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
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

}  // namespace

std::string joinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

void writeFileAtomic(const std::string& path, std::string_view bytes) {
  std::filesystem::path p(path);
  std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  std::string tmpl = joinPath(dir, "." + p.filename().string() + ".tmp.XXXXXX");
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) inputError("cannot write '", path, "': ", errnoText());
  try {
    writeAll(fd, bytes, path);
    if (::fsync(fd) != 0) inputError("cannot fsync '", path, "': ", errnoText());
  } catch (...) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw;
  }
  ::fchmod(fd, 0644);
  ::close(fd);
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    std::string why = errnoText();
    ::unlink(tmpl.c_str());
    inputError("cannot rename into '", path, "': ", why);
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
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
