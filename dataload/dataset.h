// Datasets: random access to uint8 images and int64 labels, behind one interface.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tl::data {

class SampleCache;

struct ImageShape {
  int channels = 0;
  int height = 0;
  int width = 0;
  int64_t numel() const { return int64_t(channels) * height * width; }
  bool operator==(const ImageShape& o) const {
    return channels == o.channels && height == o.height && width == o.width;
  }
};

// One decoded image: uint8, HWC (channels interleaved), rows contiguous.
struct ImageView {
  ImageView() = default;
  ImageView(const uint8_t* pixels, ImageShape shape, int reduction = 1, ImageShape storedShape = {})
      : pixels(pixels), shape(shape), reduction(reduction), storedShape(storedShape) {}

  const uint8_t* pixels = nullptr;
  ImageShape shape;
  // A decoding dataset may decode at 1/reduction of each side (JPEG DCT scaling) when the
  // transform allows it (Dataset::imageAtReduction); `shape` is then the decoded size and
  // `storedShape` the size in the file. A zero storedShape means "as decoded".
  int reduction = 1;
  ImageShape storedShape;
};

// Called by a decoding dataset with an image's stored size once its header is read; returns
// the reduction to decode at: 1 (full size), 2, 4 or 8.
using PickReduction = std::function<int(const ImageShape& stored)>;

enum class Split { Train, Test };

// Random-access dataset. All methods are const and thread-safe: loader workers call them
// concurrently.
class Dataset {
 public:
  virtual ~Dataset() = default;
  // Human-readable, for logs: "CIFAR-10 train, 50000 images, from /data/cifar".
  virtual std::string describe() const = 0;
  virtual int64_t size() const = 0;
  virtual int numClasses() const = 0;
  virtual int64_t label(int64_t index) const = 0;
  // The shape every image has; for datasets whose images differ in size (image folders)
  // height and width are 0 and only channels is set.
  virtual ImageShape imageShape() const = 0;
  // The image at `index`. In-memory datasets return a view into their own storage and leave
  // `scratch` alone; decoding datasets decode into `scratch` and return a view of it.
  virtual ImageView image(int64_t index, std::vector<uint8_t>& scratch) const = 0;
  // image(), decoded at the reduction `pick` chooses where the format can decode a smaller
  // image cheaply (JPEG). The default decodes at full size and never calls `pick`.
  virtual ImageView imageAtReduction(int64_t index, std::vector<uint8_t>& scratch,
                                     const PickReduction& pick) const {
    return image(index, scratch);
  }
  // A hint that image `index` is read next. Shuffled reads of an in-memory dataset miss the
  // cache on every image; starting the memory traffic one sample early hides most of that.
  // Changes no result; the default does nothing.
  virtual void prefetch(int64_t index) const {}
  // Samples whose files were found corrupt and replaced so far (DatasetOptions::skipCorrupt),
  // ascending. Formats that cannot be corrupt per sample have none.
  virtual std::vector<int64_t> corruptSamplesSkipped() const { return {}; }
  // The cache of encoded samples this dataset reads through (DatasetOptions::cacheBytes), or
  // nullptr: datasets decoded into memory at open have none.
  virtual SampleCache* sampleCache() const { return nullptr; }
};

struct DatasetOptions {
  // Image folders: an image that cannot be decoded is replaced by the next decodable image of
  // its class and counted, instead of failing the run (image_folder.h). Other kinds ignore it.
  bool skipCorrupt = false;
  // Image folders: keep up to this many bytes of encoded samples in memory (sample_cache.h);
  // a negative value means no cache. With a cache, every file read from storage is dropped
  // from the kernel's page cache afterwards (POSIX_FADV_DONTNEED), so the memory that caches
  // the data set is the budget and a miss really reads storage. Never changes a sample.
  int64_t cacheBytes = -1;
  // Image folders: emulated storage speed (tl-launch --emulate-storage-mbps). A file read
  // from storage (a cache miss, or every read without a cache) takes at least
  // bytes / storageBytesPerSecond seconds: the reading thread sleeps out the rest, using no
  // core. Timing only: the bytes read are the same. 0: storage at its own speed.
  double storageBytesPerSecond = 0;
};

// Opens a dataset by kind: "cifar10" (data_batch_1..5.bin and test_batch.bin, see cifar10.h),
// "mnist" or "fashion-mnist" (train-/t10k- IDX files, plain or .gz, see idx.h): decoded into
// memory, HWC uint8. "imagefolder": JPEG files in dir/train/<class>/ and dir/val/<class>/,
// listed at open and decoded per sample (image_folder.h).
// Throws InputError naming the file and what is wrong (missing, truncated, corrupt).
std::unique_ptr<Dataset> openDataset(const std::string& kind, const std::string& dir, Split split);
std::unique_ptr<Dataset> openDataset(const std::string& kind, const std::string& dir, Split split,
                                     const DatasetOptions& options);

// The dataset kinds a job can read, for --help and error messages: openDataset's image kinds and
// the array kinds "tensors" and "tokens" (openArrayDataset, array_dataset.h).
std::vector<std::string> datasetKinds();

}  // namespace tl::data
