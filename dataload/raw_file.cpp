#include "dataload/raw_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/check.h"
#include "common/files.h"

namespace tl::data {
namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string readPlain(const std::string& what, const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) inputError(what, " file '", path, "' cannot be read: ", std::strerror(errno));
  std::string bytes;
  char buffer[1 << 16];
  while (true) {
    size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    bytes.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) {
    inputError(what, " file '", path, "' cannot be read: ", std::strerror(errno));
  }
  return bytes;
}

std::string readGzip(const std::string& what, const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) inputError(what, " file '", path, "' cannot be read: ", std::strerror(errno));
  std::unique_ptr<gzFile_s, int (*)(gzFile)> guard(file, &gzclose);
  gzbuffer(file, 1 << 17);
  std::string bytes;
  char buffer[1 << 17];
  while (true) {
    int n = gzread(file, buffer, sizeof buffer);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      inputError(what, " file '", path, "' is not valid gzip data: ", message);
    }
    bytes.append(buffer, size_t(n));
    if (n == 0) break;
  }
  // At the end of a stream that stops early zlib reports Z_BUF_ERROR instead of a clean end.
  int code = 0;
  const char* message = gzerror(file, &code);
  if (code == Z_BUF_ERROR) inputError(what, " file '", path, "' is a truncated gzip stream");
  if (code != Z_OK) inputError(what, " file '", path, "' is not valid gzip data: ", message);
  return bytes;
}

}  // namespace

std::string readDatasetFile(const std::string& what, const std::string& path) {
  if (!fileExists(path)) inputError(what, " file '", path, "' is missing");
  return endsWith(path, ".gz") ? readGzip(what, path) : readPlain(what, path);
}

}  // namespace tl::data
