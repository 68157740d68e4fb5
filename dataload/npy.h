// NumPy .npy arrays and raw little-endian arrays, memory-mapped read-only.
//
// The .npy format (numpy.lib.format): the magic "\x93NUMPY", a major and minor version byte,
// the header length (2 bytes little-endian for version 1, 4 bytes for versions 2 and 3), then
// an ASCII Python dict literal padded with spaces and ended by '\n':
//   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 1, 28, 28), }
// then the data, C order. tl reads it strictly: exactly those three keys, a little-endian (or
// one-byte) dtype it knows, C order, and a file exactly as long as the header says. Every
// mismatch is one InputError naming the file and what is wrong.
//
// The data is mapped, not read: the processes of a job on one machine share the page cache's
// copy, and a sample costs only the pages it touches.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tl::data {

enum class ArrayDtype { UInt8, UInt16, Int32, UInt32, Int64, Float32 };

int dtypeBytes(ArrayDtype dtype);
// "uint8", "uint16", "int32", "uint32", "int64", "float32".
std::string dtypeName(ArrayDtype dtype);
// The inverse of dtypeName; InputError naming `what` (a flag) for another name.
ArrayDtype parseDtypeName(const std::string& what, const std::string& name);

// A whole file mapped read-only. InputError when `path` is missing, is not a regular file
// (a folder, a pipe, a device) or cannot be mapped.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  int64_t size_ = 0;
};

struct NpyHeader {
  ArrayDtype dtype = ArrayDtype::UInt8;
  std::vector<int64_t> shape;
  int64_t dataOffset = 0;  // bytes before the first element
};

// Parses the header of a .npy file of `size` bytes starting at `bytes`, and checks that the
// file holds exactly the data it announces. `path` only names the file in messages.
NpyHeader parseNpyHeader(const std::string& path, const uint8_t* bytes, int64_t size);

// An array in a mapped file: `shape[0]` rows of `rowBytes()` bytes, C order.
struct ArrayFile {
  std::string path;
  ArrayDtype dtype = ArrayDtype::UInt8;
  std::vector<int64_t> shape;
  std::shared_ptr<const MappedFile> file;
  int64_t dataOffset = 0;

  const uint8_t* data() const { return file->data() + dataOffset; }
  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  int64_t rowElements() const;
  int64_t rowBytes() const { return rowElements() * dtypeBytes(dtype); }
  const uint8_t* row(int64_t i) const { return data() + i * rowBytes(); }
};

// Opens a .npy file (see above). The array must have at least one dimension.
ArrayFile openNpy(const std::string& path);

// Opens a headerless little-endian array of `dtype` as one dimension. InputError when the
// size is not a whole number of elements or the file is empty.
ArrayFile openRawArray(const std::string& path, ArrayDtype dtype);

// "(3, 32, 32)", "(5,)": a shape as NumPy prints it.
std::string shapeText(const std::vector<int64_t>& shape);

// A version 1.0 .npy file holding `data` (the product of `shape` elements of `dtype`).
std::string encodeNpy(ArrayDtype dtype, const std::vector<int64_t>& shape, const void* data);

}  // namespace tl::data
