#include "dataload/idx.h"

#include <algorithm>
#include <cstdio>

#include "common/check.h"
#include "common/files.h"
#include "dataload/memory_dataset.h"
#include "dataload/raw_file.h"

namespace tl::data {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;
constexpr int kMnistClasses = 10;

uint32_t bigEndian32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", value);
  return text;
}

}  // namespace

IdxArray readIdxFile(const std::string& what, const std::string& path, int expectedDims) {
  DatasetFileStream stream(what, path);
  uint8_t header[4 + 4 * 4] = {};
  TL_CHECK(expectedDims >= 1 && expectedDims <= 4, "IDX arrays of ", expectedDims, " dimensions");
  const int64_t magicRead = int64_t(stream.read(header, 4));
  if (magicRead == 0) emptyDatasetFile(what, path);
  TL_REQUIRE(magicRead == 4, what, " file '", path, "' is truncated: ", magicRead,
             " bytes, shorter than the 4-byte IDX magic number");
  const uint32_t magic = bigEndian32(header);
  const uint32_t expectedMagic = uint32_t(kUnsignedByteType) << 8 | uint32_t(expectedDims);
  TL_REQUIRE(magic == expectedMagic, what, " file '", path, "' has bad magic number ",
             hex32(magic), ", expected ", hex32(expectedMagic), " (unsigned bytes, ",
             expectedDims, expectedDims == 1 ? " dimension)" : " dimensions)");
  const int64_t headerBytes = 4 + 4 * int64_t(expectedDims);
  stream.read(header + 4, size_t(headerBytes - 4));
  // (A plain file's size is known: report it, as the whole file is what is short.)
  const auto sizeSoFar = [&] {
    return stream.knownSize() >= 0 ? stream.knownSize() : stream.bytesRead();
  };
  TL_REQUIRE(stream.bytesRead() == headerBytes, what, " file '", path,
             "' is truncated: ", sizeSoFar(), " bytes, shorter than its ", headerBytes,
             "-byte header");

  IdxArray array;
  // The element count saturates above kMaxElements so that absurd dimensions cannot overflow;
  // such a header announces more than any stream holds and is reported as truncated.
  constexpr int64_t kMaxElements = int64_t(1) << 48;
  int64_t elements = 1;
  std::string shapeText;
  for (int d = 0; d < expectedDims; ++d) {
    const int64_t dim = bigEndian32(header + 4 + 4 * d);
    array.dims.push_back(dim);
    shapeText += (d ? " x " : "") + std::to_string(dim);
    elements = dim == 0 ? 0 : (elements > kMaxElements / dim ? kMaxElements + 1 : elements * dim);
  }
  const int64_t announced = headerBytes + elements;
  if (stream.knownSize() >= 0) {
    TL_REQUIRE(stream.knownSize() >= announced, what, " file '", path,
               "' is truncated: ", stream.knownSize(), " bytes, but its header announces ",
               shapeText, " values");
    TL_REQUIRE(stream.knownSize() == announced, what, " file '", path,
               "' is corrupt: ", stream.knownSize() - announced, " bytes follow the ", shapeText,
               " values its header announces");
  }
  // Read exactly what the header announces, growing the buffer only as data arrives: neither
  // a header announcing more than the file holds nor a stream inflating to more than the header
  // announces (a gzip bomb) makes this allocate beyond the data itself.
  constexpr int64_t kChunk = int64_t(1) << 22;
  while (int64_t(array.values.size()) < elements) {
    const size_t have = array.values.size();
    const size_t want = size_t(std::min<int64_t>(kChunk, elements - int64_t(have)));
    array.values.resize(have + want);
    const size_t got = stream.read(array.values.data() + have, want);
    array.values.resize(have + got);
    TL_REQUIRE(got == want, what, " file '", path, "' is truncated: ", stream.bytesRead(),
               " bytes, but its header announces ", shapeText, " values");
  }
  uint8_t extra = 0;
  TL_REQUIRE(stream.read(&extra, 1) == 0, what, " file '", path,
             "' is corrupt: more bytes follow the ", shapeText, " values its header announces");
  return array;
}

std::string resolveIdxPath(const std::string& what, const std::string& dir,
                           const std::string& name) {
  const std::string plain = joinPath(dir, name);
  if (fileExists(plain)) return plain;
  const std::string gz = plain + ".gz";
  if (fileExists(gz)) return gz;
  inputError(what, " file '", plain, "' is missing (neither it nor ", name, ".gz exists)");
}

std::unique_ptr<Dataset> openMnistLike(const std::string& what, const std::string& dir,
                                       Split split) {
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  const std::string imagesPath = resolveIdxPath(what, dir, prefix + "-images-idx3-ubyte");
  const std::string labelsPath = resolveIdxPath(what, dir, prefix + "-labels-idx1-ubyte");

  IdxArray images = readIdxFile(what, imagesPath, 3);
  IdxArray labels = readIdxFile(what, labelsPath, 1);
  const int64_t count = images.dims[0];
  TL_REQUIRE(count > 0, what, " file '", imagesPath, "' holds no images");
  constexpr int64_t kMaxSide = 1 << 15;
  TL_REQUIRE(images.dims[1] > 0 && images.dims[1] <= kMaxSide && images.dims[2] > 0 &&
                 images.dims[2] <= kMaxSide,
             what, " file '", imagesPath,
             "' is corrupt: images of ", images.dims[1], " x ", images.dims[2], " pixels");
  TL_REQUIRE(labels.dims[0] == count, what, " files '", imagesPath, "' and '", labelsPath,
             "' do not match: ", count, " images but ", labels.dims[0], " labels");

  std::vector<int64_t> labelValues(labels.values.size());
  for (size_t i = 0; i < labels.values.size(); ++i) {
    TL_REQUIRE(labels.values[i] < kMnistClasses, what, " file '", labelsPath,
               "' is corrupt: label ", int(labels.values[i]), " at index ", i,
               ", but labels are 0..9");
    labelValues[i] = labels.values[i];
  }
  const ImageShape shape{1, int(images.dims[1]), int(images.dims[2])};
  std::string description = str(what, split == Split::Train ? " train, " : " test, ", count,
                                " images of ", shape.height, "x", shape.width, ", from ", dir);
  return std::make_unique<InMemoryDataset>(std::move(description), shape, kMnistClasses,
                                           std::move(images.values), std::move(labelValues));
}

}  // namespace tl::data
