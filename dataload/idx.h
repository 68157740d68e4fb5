// IDX files, the format of MNIST and Fashion-MNIST: a big-endian header (two zero bytes, a type
// byte, 0x08 for unsigned bytes, the number of dimensions, then one uint32 per dimension)
// followed by the data. train-images-idx3-ubyte / train-labels-idx1-ubyte for training,
// t10k-images-idx3-ubyte / t10k-labels-idx1-ubyte for testing, each plain or gzip-compressed
// (a ".gz" suffix); the plain file wins when both are present.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataload/dataset.h"

namespace tl::data {

// An unsigned-byte IDX array.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> values;  // row-major, dims[0] * dims[1] * ... bytes
};

// Reads the IDX file `path` (plain or .gz, see raw_file.h), which must hold `expectedDims`
// dimensions of unsigned bytes. `what` names the dataset in InputError messages (empty, bad
// magic, truncated, trailing data). Only the bytes the header announces are read (inflated): a
// stream holding more is corrupt, found after one more byte, whatever its real length.
IdxArray readIdxFile(const std::string& what, const std::string& path, int expectedDims);

// The file to read for `name` in `dir`: the plain file if present, otherwise `name`.gz.
// InputError naming both when neither exists.
std::string resolveIdxPath(const std::string& what, const std::string& dir,
                           const std::string& name);

// MNIST-like images (N x rows x cols, one channel) with labels 0..9. `what` is "MNIST" or
// "Fashion-MNIST" and only changes the messages.
std::unique_ptr<Dataset> openMnistLike(const std::string& what, const std::string& dir,
                                       Split split);

}  // namespace tl::data
