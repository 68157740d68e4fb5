// Datasets: random access to uint8 images and int64 labels, behind one interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tl::data {

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
  const uint8_t* pixels = nullptr;
  ImageShape shape;
};

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
  // A hint that image `index` is read next. Shuffled reads of an in-memory dataset miss the
  // cache on every image; starting the memory traffic one sample early hides most of that.
  // Changes no result; the default does nothing.
  virtual void prefetch(int64_t index) const {}
};

// Opens a dataset by kind: "cifar10" (data_batch_1..5.bin and test_batch.bin, see cifar10.h),
// "mnist" or "fashion-mnist" (train-/t10k- IDX files, plain or .gz, see idx.h). The images are
// decoded into memory, HWC uint8.
// Throws InputError naming the file and what is wrong (missing, truncated, corrupt).
std::unique_ptr<Dataset> openDataset(const std::string& kind, const std::string& dir, Split split);

// The dataset kinds openDataset knows, for --help and error messages.
std::vector<std::string> datasetKinds();

}  // namespace tl::data
