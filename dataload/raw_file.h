// Reads of dataset files, plain or gzip-compressed, with errors that name the dataset, the file
// and what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tl::data {

// A dataset file read front to back; a name ending in ".gz" is inflated with zlib as it is read,
// so a reader that knows how many bytes to expect (IDX headers) never inflates more than that.
// Throws InputError: "<what> file '<path>' is missing", "... is not a regular file (a folder)",
// "... cannot be read: <reason>", "... is a truncated gzip stream", "... is not valid gzip data:
// <reason>".
class DatasetFileStream {
 public:
  DatasetFileStream(const std::string& what, const std::string& path);
  ~DatasetFileStream();
  DatasetFileStream(const DatasetFileStream&) = delete;
  DatasetFileStream& operator=(const DatasetFileStream&) = delete;

  // Reads up to `size` bytes into `out`; fewer only at the end of the (inflated) data.
  size_t read(void* out, size_t size);
  // The bytes read so far (inflated bytes for a gzip file).
  int64_t bytesRead() const { return bytesRead_; }
  // A plain file's size in bytes; -1 for a gzip file, whose inflated size is not known ahead.
  int64_t knownSize() const { return knownSize_; }
  const std::string& what() const { return what_; }
  const std::string& path() const { return path_; }

 private:
  struct Source;
  std::string what_;
  std::string path_;
  std::unique_ptr<Source> source_;
  int64_t bytesRead_ = 0;
  int64_t knownSize_ = -1;
};

// Reads `path` completely (see DatasetFileStream). `what` names the dataset for messages
// ("CIFAR-10", "MNIST"). A file without any (inflated) byte is an InputError "<what> file
// '<path>' is empty (0 bytes)": no format tl reads has empty files, and one among good files
// would silently drop part of the data.
std::string readDatasetFile(const std::string& what, const std::string& path);

// InputError "<what> file '<path>' is empty (0 bytes)".
[[noreturn]] void emptyDatasetFile(const std::string& what, const std::string& path);

}  // namespace tl::data
