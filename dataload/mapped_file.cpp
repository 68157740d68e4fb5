// MappedFile, and the dtype names of npy.h.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/check.h"
#include "dataload/npy.h"

namespace tl::data {

int dtypeBytes(ArrayDtype dtype) {
  switch (dtype) {
    case ArrayDtype::UInt8: return 1;
    case ArrayDtype::UInt16: return 2;
    case ArrayDtype::Int32:
    case ArrayDtype::UInt32:
    case ArrayDtype::Float32: return 4;
    case ArrayDtype::Int64: return 8;
  }
  throw Error(str("unknown dtype ", int(dtype)));
}

std::string dtypeName(ArrayDtype dtype) {
  switch (dtype) {
    case ArrayDtype::UInt8: return "uint8";
    case ArrayDtype::UInt16: return "uint16";
    case ArrayDtype::Int32: return "int32";
    case ArrayDtype::UInt32: return "uint32";
    case ArrayDtype::Int64: return "int64";
    case ArrayDtype::Float32: return "float32";
  }
  throw Error(str("unknown dtype ", int(dtype)));
}

ArrayDtype parseDtypeName(const std::string& what, const std::string& name) {
  for (ArrayDtype d : {ArrayDtype::UInt8, ArrayDtype::UInt16, ArrayDtype::Int32,
                       ArrayDtype::UInt32, ArrayDtype::Int64, ArrayDtype::Float32}) {
    if (dtypeName(d) == name) return d;
  }
  inputError(what, ": unknown dtype '", name,
             "' (known: uint8, uint16, int32, uint32, int64, float32)");
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) inputError("data file '", path, "' is missing");
    inputError("data file '", path, "' cannot be read: ", std::strerror(errno));
  }
  // Checked before opening: opening a pipe would block.
  TL_REQUIRE(S_ISREG(info.st_mode), "data file '", path, "' is not a regular file",
             S_ISDIR(info.st_mode) ? " (it is a folder)" : "");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) inputError("data file '", path, "' cannot be read: ", std::strerror(errno));
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
    ::close(fd);
    inputError("data file '", path, "' is not a regular file");
  }
  size_ = int64_t(opened.st_size);
  if (size_ > 0) {
    void* map = ::mmap(nullptr, size_t(size_), PROT_READ, MAP_SHARED, fd, 0);
    const int error = errno;
    ::close(fd);
    if (map == MAP_FAILED)
      inputError("data file '", path, "' cannot be mapped: ", std::strerror(error));
    data_ = static_cast<const uint8_t*>(map);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_t(size_));
}

}  // namespace tl::data
