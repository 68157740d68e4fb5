#include "dataload/memory_dataset.h"

#include <utility>

#include "common/check.h"

namespace tl::data {

InMemoryDataset::InMemoryDataset(std::string description, ImageShape shape, int numClasses,
                                 std::vector<uint8_t> pixels, std::vector<int64_t> labels)
    : description_(std::move(description)),
      shape_(shape),
      numClasses_(numClasses),
      pixels_(std::move(pixels)),
      labels_(std::move(labels)) {
  TL_CHECK(shape_.channels > 0 && shape_.height > 0 && shape_.width > 0, "image shape ",
           shape_.channels, "x", shape_.height, "x", shape_.width);
  TL_CHECK_GT(numClasses_, 0);
  TL_CHECK_EQ(pixels_.size(), labels_.size() * size_t(shape_.numel()));
  for (int64_t label : labels_) TL_CHECK(label >= 0 && label < numClasses_, "label ", label);
}

int64_t InMemoryDataset::label(int64_t index) const {
  TL_CHECK(index >= 0 && index < size(), "index ", index, " of ", size());
  return labels_[size_t(index)];
}

ImageView InMemoryDataset::image(int64_t index, std::vector<uint8_t>&) const {
  TL_CHECK(index >= 0 && index < size(), "index ", index, " of ", size());
  return ImageView{pixels_.data() + index * shape_.numel(), shape_};
}

void InMemoryDataset::prefetch(int64_t index) const {
  if (index < 0 || index >= size()) return;  // only a hint
  const uint8_t* image = pixels_.data() + index * shape_.numel();
  constexpr int64_t kCacheLine = 64;
  for (int64_t offset = 0; offset < shape_.numel(); offset += kCacheLine) {
    __builtin_prefetch(image + offset);
  }
}

}  // namespace tl::data
