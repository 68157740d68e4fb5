#include "dataload/cifar10.h"

#include "common/check.h"
#include "common/files.h"
#include "dataload/memory_dataset.h"
#include "dataload/raw_file.h"

namespace tl::data {
namespace {

constexpr int64_t kPlaneBytes = kCifarSide * kCifarSide;

}  // namespace

std::vector<std::string> cifar10FileNames(Split split) {
  if (split == Split::Test) return {"test_batch.bin"};
  std::vector<std::string> names;
  for (int i = 1; i <= 5; ++i) names.push_back(str("data_batch_", i, ".bin"));
  return names;
}

void readCifar10File(const std::string& path, std::vector<uint8_t>& hwcPixels,
                     std::vector<int64_t>& labels) {
  const std::string bytes = readDatasetFile("CIFAR-10", path);
  const int64_t size = int64_t(bytes.size());
  TL_REQUIRE(size % kCifarRecordBytes == 0, "CIFAR-10 file '", path, "' is truncated: ", size,
             " bytes is not a multiple of the ", kCifarRecordBytes, "-byte record");
  const int64_t count = size / kCifarRecordBytes;
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());

  const size_t firstPixel = hwcPixels.size();
  hwcPixels.resize(firstPixel + size_t(count * kCifarImageBytes));
  labels.reserve(labels.size() + size_t(count));
  for (int64_t record = 0; record < count; ++record) {
    const uint8_t* in = data + record * kCifarRecordBytes;
    TL_REQUIRE(in[0] < kCifarClasses, "CIFAR-10 file '", path, "' is corrupt: record ", record,
               " (byte offset ", record * kCifarRecordBytes, ") has label ", int(in[0]),
               ", but labels are 0..9");
    labels.push_back(in[0]);
    const uint8_t* planes = in + 1;
    uint8_t* out = hwcPixels.data() + firstPixel + size_t(record * kCifarImageBytes);
    for (int64_t pixel = 0; pixel < kPlaneBytes; ++pixel) {
      for (int channel = 0; channel < kCifarChannels; ++channel) {
        out[pixel * kCifarChannels + channel] = planes[channel * kPlaneBytes + pixel];
      }
    }
  }
}

std::string encodeCifar10Records(const uint8_t* hwcPixels, const int64_t* labels, int64_t count) {
  std::string bytes(size_t(count * kCifarRecordBytes), '\0');
  auto* data = reinterpret_cast<uint8_t*>(bytes.data());
  for (int64_t record = 0; record < count; ++record) {
    TL_CHECK(labels[record] >= 0 && labels[record] < kCifarClasses, "label ", labels[record]);
    uint8_t* out = data + record * kCifarRecordBytes;
    out[0] = uint8_t(labels[record]);
    const uint8_t* in = hwcPixels + record * kCifarImageBytes;
    for (int64_t pixel = 0; pixel < kPlaneBytes; ++pixel) {
      for (int channel = 0; channel < kCifarChannels; ++channel) {
        out[1 + channel * kPlaneBytes + pixel] = in[pixel * kCifarChannels + channel];
      }
    }
  }
  return bytes;
}

std::unique_ptr<Dataset> openCifar10(const std::string& dir, Split split) {
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
  for (const std::string& name : cifar10FileNames(split)) {
    readCifar10File(joinPath(dir, name), pixels, labels);
  }
  const char* splitName = split == Split::Train ? "train" : "test";
  TL_REQUIRE(!labels.empty(), "CIFAR-10 ", splitName, " split in '", dir,
             "' holds no images: every file is empty");
  std::string description =
      str("CIFAR-10 ", splitName, ", ", labels.size(), " images, from ", dir);
  return std::make_unique<InMemoryDataset>(std::move(description),
                                           ImageShape{kCifarChannels, kCifarSide, kCifarSide},
                                           kCifarClasses, std::move(pixels), std::move(labels));
}

}  // namespace tl::data
