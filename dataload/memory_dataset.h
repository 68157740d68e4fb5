// A dataset held in memory as one contiguous block of HWC uint8 images: what the CIFAR-10 and
// IDX readers and the synthetic generator produce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataload/dataset.h"

namespace tl::data {

class InMemoryDataset : public Dataset {
 public:
  // `pixels` holds labels.size() images of `shape`, HWC, back to back. Every label must lie in
  // [0, numClasses). The readers validate their files before they get here, so a mismatch is
  // an internal error (tl::Error), not an InputError.
  InMemoryDataset(std::string description, ImageShape shape, int numClasses,
                  std::vector<uint8_t> pixels, std::vector<int64_t> labels);

  std::string describe() const override { return description_; }
  int64_t size() const override { return int64_t(labels_.size()); }
  int numClasses() const override { return numClasses_; }
  int64_t label(int64_t index) const override;
  ImageShape imageShape() const override { return shape_; }
  // A view into the dataset's own storage; `scratch` is not touched.
  ImageView image(int64_t index, std::vector<uint8_t>& scratch) const override;
  // Asks the CPU to fetch the image's cache lines.
  void prefetch(int64_t index) const override;

  const std::vector<uint8_t>& pixels() const { return pixels_; }
  const std::vector<int64_t>& labels() const { return labels_; }

 private:
  std::string description_;
  ImageShape shape_;
  int numClasses_;
  std::vector<uint8_t> pixels_;
  std::vector<int64_t> labels_;
};

}  // namespace tl::data
