#include "dataload/raw_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/check.h"
#include "common/files.h"

namespace tl::data {
namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

// One of the two is open.
struct DatasetFileStream::Source {
  FILE* plain = nullptr;
  gzFile gz = nullptr;
  ~Source() {
    if (plain) std::fclose(plain);
    if (gz) gzclose(gz);
  }
};

DatasetFileStream::DatasetFileStream(const std::string& what, const std::string& path)
    : what_(what), path_(path), source_(std::make_unique<Source>()) {
  requireRegularFile(what + " file", path);
  if (endsWith(path, ".gz")) {
    source_->gz = gzopen(path.c_str(), "rb");
    if (!source_->gz) inputError(what, " file '", path, "' cannot be read: ", std::strerror(errno));
    gzbuffer(source_->gz, 1 << 17);
    return;
  }
  source_->plain = std::fopen(path.c_str(), "rb");
  if (!source_->plain)
    inputError(what, " file '", path, "' cannot be read: ", std::strerror(errno));
  if (std::fseek(source_->plain, 0, SEEK_END) == 0) {
    knownSize_ = std::ftell(source_->plain);
    std::rewind(source_->plain);
  }
}

DatasetFileStream::~DatasetFileStream() = default;

size_t DatasetFileStream::read(void* out, size_t size) {
  auto* bytes = static_cast<char*>(out);
  size_t done = 0;
  if (source_->plain) {
    done = std::fread(bytes, 1, size, source_->plain);
    if (done < size && std::ferror(source_->plain))
      inputError(what_, " file '", path_, "' cannot be read: ", std::strerror(errno));
    bytesRead_ += int64_t(done);
    return done;
  }
  while (done < size) {
    const unsigned ask = unsigned(std::min<size_t>(size - done, 1u << 30));
    const int n = gzread(source_->gz, bytes + done, ask);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(source_->gz, &code);
      inputError(what_, " file '", path_, "' is not valid gzip data: ", message);
    }
    if (n == 0) {
      // At the end of a stream that stops early zlib reports Z_BUF_ERROR instead of a clean end.
      int code = 0;
      const char* message = gzerror(source_->gz, &code);
      if (code == Z_BUF_ERROR) inputError(what_, " file '", path_, "' is a truncated gzip stream");
      if (code != Z_OK) inputError(what_, " file '", path_, "' is not valid gzip data: ", message);
      break;
    }
    done += size_t(n);
  }
  bytesRead_ += int64_t(done);
  return done;
}

void emptyDatasetFile(const std::string& what, const std::string& path) {
  inputError(what, " file '", path, "' is empty (0 bytes)");
}

std::string readDatasetFile(const std::string& what, const std::string& path) {
  DatasetFileStream stream(what, path);
  std::string bytes;
  if (stream.knownSize() > 0) bytes.reserve(size_t(stream.knownSize()));
  char buffer[1 << 16];
  while (true) {
    const size_t n = stream.read(buffer, sizeof buffer);
    bytes.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (bytes.empty()) emptyDatasetFile(what, path);
  return bytes;
}

}  // namespace tl::data
