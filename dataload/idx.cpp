#include "dataload/idx.h"

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

IdxArray parseIdx(const std::string& what, const std::string& path, const std::string& bytes,
                  int expectedDims) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const int64_t size = int64_t(bytes.size());
  TL_REQUIRE(size >= 4, what, " file '", path, "' is truncated: ", size,
             " bytes, shorter than the 4-byte IDX magic number");
  const uint32_t magic = bigEndian32(data);
  const uint32_t expectedMagic = uint32_t(kUnsignedByteType) << 8 | uint32_t(expectedDims);
  TL_REQUIRE(magic == expectedMagic, what, " file '", path, "' has bad magic number ",
             hex32(magic), ", expected ", hex32(expectedMagic), " (unsigned bytes, ",
             expectedDims, expectedDims == 1 ? " dimension)" : " dimensions)");
  const int64_t headerBytes = 4 + 4 * int64_t(expectedDims);
  TL_REQUIRE(size >= headerBytes, what, " file '", path, "' is truncated: ", size,
             " bytes, shorter than its ", headerBytes, "-byte header");

  IdxArray array;
  // The element count saturates just above the file size so that absurd dimensions cannot
  // overflow; such a file is reported as truncated.
  int64_t elements = 1;
  std::string shapeText;
  for (int d = 0; d < expectedDims; ++d) {
    int64_t dim = bigEndian32(data + 4 + 4 * d);
    array.dims.push_back(dim);
    shapeText += (d ? " x " : "") + std::to_string(dim);
    elements = dim == 0 ? 0 : (elements > size / dim ? size + 1 : elements * dim);
  }
  const int64_t announced = headerBytes + elements;
  TL_REQUIRE(size >= announced, what, " file '", path, "' is truncated: ", size,
             " bytes, but its header announces ", shapeText, " values");
  TL_REQUIRE(size == announced, what, " file '", path, "' is corrupt: ", size - announced,
             " bytes follow the ", shapeText, " values its header announces");
  array.values.assign(data + headerBytes, data + size);
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

  IdxArray images = parseIdx(what, imagesPath, readDatasetFile(what, imagesPath), 3);
  IdxArray labels = parseIdx(what, labelsPath, readDatasetFile(what, labelsPath), 1);
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
