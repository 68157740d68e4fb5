// Image folders in the ImageNet layout, with torchvision ImageFolder's class indices:
//
//   DIR/train/<class>/*.jpg|*.jpeg    (Split::Train; extensions in any letter case)
//   DIR/val/<class>/...               (Split::Test)
//
// Classes are the sorted names of the subfolders (byte order, as Python sorts), a class's
// index is its position; files are sorted by name within a class, so sample indices follow
// the order (class, file name) and are the same on every machine. Other files are ignored, as
// are subfolders of a class folder (torchvision would descend into them). The folder is listed
// once, at open; each sample is read and decoded when loaded, at full size or, when the
// transform allows it, at 1/2, 1/4 or 1/8 (JPEG DCT scaling).
//
// Corrupt files (not a JPEG, truncated, empty): "image '<path>' is not a valid JPEG: ..." by
// default. With skipCorrupt, a sample whose file cannot be decoded gets the next decodable
// file of its class instead (in file order, wrapping around; the label stays right) and the
// file is counted and reported once. The replacement depends only on the files, never on
// which thread found the corrupt one first.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataload/dataset.h"
#include "dataload/sample_cache.h"

namespace tl::data {

class ImageFolderDataset : public Dataset {
 public:
  // Lists `dir`/train or `dir`/val. InputError when the split folder is missing, has no class
  // folders, a class folder has no JPEG files, or (val) the classes differ from train's.
  ImageFolderDataset(const std::string& dir, Split split, const DatasetOptions& options);

  std::string describe() const override;
  int64_t size() const override { return int64_t(fileOffsets_.size()) - 1; }
  int numClasses() const override { return int(classNames_.size()); }
  int64_t label(int64_t index) const override;
  ImageShape imageShape() const override { return ImageShape{3, 0, 0}; }
  ImageView image(int64_t index, std::vector<uint8_t>& scratch) const override;
  ImageView imageAtReduction(int64_t index, std::vector<uint8_t>& scratch,
                             const PickReduction& pick) const override;

  const std::vector<std::string>& classNames() const { return classNames_; }
  // The file of sample `index`.
  std::string path(int64_t index) const;
  // Files found corrupt and replaced so far (skipCorrupt only; each file counts once).
  int64_t corruptFilesSkipped() const { return corruptFound_.load(std::memory_order_relaxed); }
  std::vector<int64_t> corruptSamplesSkipped() const override;
  SampleCache* sampleCache() const override { return cache_.get(); }

 private:
  // --emulate-storage-mbps: sleeps until a read of `bytes` begun at `readStart` has taken
  // bytes / DatasetOptions::storageBytesPerSecond seconds. No-op without emulation.
  void waitForEmulatedStorage(std::chrono::steady_clock::time_point readStart, size_t bytes) const;
  ImageView decodeFile(int64_t index, std::vector<uint8_t>& scratch,
                       const PickReduction& pick) const;
  ImageView decodeSkippingCorrupt(int64_t index, std::vector<uint8_t>& scratch,
                                  const PickReduction& pick) const;

  std::string splitDir_;
  DatasetOptions options_;
  std::vector<std::string> classNames_;
  std::vector<int64_t> classBegin_;  // first sample of each class, then size()
  // File names (without their class folder), concatenated: file i is
  // fileNames_[fileOffsets_[i], fileOffsets_[i + 1]). ImageNet's 1.28M names fit in ~30 MB.
  std::string fileNames_;
  std::vector<uint64_t> fileOffsets_;
  // skipCorrupt: per file, whether it is known not to decode, so later loads skip it at once.
  std::unique_ptr<std::atomic<bool>[]> knownCorrupt_;
  mutable std::atomic<int64_t> corruptFound_{0};
  std::unique_ptr<SampleCache> cache_;  // options.cacheBytes >= 0
};

// The class folder names of an image-folder split (`dir`/train or `dir`/val), sorted.
// InputError when the folder is missing or cannot be read.
std::vector<std::string> imageFolderClasses(const std::string& splitDir);

// "train" or "val".
const char* imageFolderSplitName(Split split);

}  // namespace tl::data
