// Transforms from a uint8 HWC image to a float CHW tensor slot, with per-sample randomness.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataload/dataset.h"
#include "dataload/sample_rng.h"
#include "dataload/sample_source.h"

namespace tl::data {

struct Normalization {
  std::vector<float> mean;  // per channel, on the [0, 1] scale
  std::vector<float> std;
};

// CIFAR-10: mean (0.4914, 0.4822, 0.4465), std (0.2023, 0.1994, 0.2010).
Normalization cifarNormalization();
// MNIST-like (1 channel): mean 0.1307, std 0.3081 (MNIST); Fashion-MNIST: 0.2860, 0.3530.
Normalization mnistNormalization();
Normalization fashionMnistNormalization();
// The normalization of a dataset kind ("cifar10", "mnist", "fashion-mnist"); InputError for
// another kind.
Normalization normalizationFor(const std::string& kind);

// A normalized value is exactly what torchvision's ToTensor() + Normalize(mean, std) computes
// in float32: ((x / 255.f) - mean) / std, each operation rounded to float. The transforms read
// it from a per-channel table of the 256 possible bytes, so the bits cannot depend on how the
// compiler contracts or vectorises arithmetic.
float normalizedValue(uint8_t pixel, float mean, float std);

// normalizedValue of every byte for every channel: entry [c * 256 + byte]. InputError for a
// normalization without one finite mean and one positive std per channel.
std::vector<float> normalizationTable(const Normalization& norm);

class Transform {
 public:
  virtual ~Transform() = default;
  // InputError when the transform cannot take images of `input` shape (channel count differs
  // from the normalization's, crop larger than the padded image).
  virtual ImageShape outputShape(const ImageShape& input) const = 0;
  // Writes outputShape(in.shape).numel() floats, CHW, to `out`. Draws only from `rng`.
  virtual void apply(const ImageView& in, SampleRng& rng, float* out) const = 0;
  // For datasets that can decode at a reduced size (Dataset::imageAtReduction): the largest
  // reduction (1, 2, 4 or 8) this transform accepts for an image stored at `stored`. `rng` is
  // a copy of the sample's generator, so the answer may follow the sample's own draws (the
  // crop it will take) without changing those apply() makes. apply() then gets the reduced
  // image with ImageView::reduction and storedShape set. The default takes full size only.
  virtual int decodeReduction(const ImageShape& stored, SampleRng rng) const { return 1; }
};

// What augmentation means (the draws, in this order, define every augmented sample's bytes):
//   top  = rng.uniformInt(0, H + 2 * padding - crop)   (row offset into the zero-padded image)
//   left = rng.uniformInt(0, W + 2 * padding - crop)
//   flip = hflip && rng.bernoulli(0.5)                   (no draw when hflip is false)
// The output pixel (y, x) is the padded image's (top + y, left + x), mirrored within the crop
// when flip is set; padding pixels are byte 0, normalized like any other 0. These are the
// operations of torchvision's RandomCrop(crop, padding), RandomHorizontalFlip() and
// Normalize(), with tl's own per-sample draws instead of torch's global generator.
// With augment == false the crop is centred and never flipped (no draws), so when the crop
// equals the image size the output is the normalized image itself.
//
// cropSize 0 means "the input's own size": with padding p > 0 that is a random translation
// by up to p pixels, with padding 0 no crop at all. That is the MNIST-like convention
// (mnistLikeAugmentation): digits and garments are centred and flipping changes their
// meaning, so training shifts them by up to 2 pixels (padding 2) and never flips them.
struct CropFlipOptions {
  int cropSize = 32;      // 0: the input's size
  int padding = 4;        // zero padding on each side before the random crop
  bool hflip = true;      // horizontal flip with p = 0.5
  bool augment = true;    // false: no crop, no flip (evaluation, --augment off)
  Normalization norm;
};

// CIFAR-10 training: crop 32 after padding 4, flip, CIFAR normalization.
CropFlipOptions cifarAugmentation();
// MNIST-like training: a random shift by up to 2 pixels (crop of the input's size after
// zero padding 2), no flip, the given normalization.
CropFlipOptions mnistLikeAugmentation(const Normalization& norm);
// The training augmentation of a dataset kind; InputError for another kind.
CropFlipOptions augmentationFor(const std::string& kind);

// Random crop (with zero padding) + horizontal flip + normalize, fused in one pass.
// InputError for an invalid normalization (sizes differ, std not positive) or negative sizes.
std::unique_ptr<Transform> makeCropFlipNormalize(const CropFlipOptions& options);

// Normalize only (evaluation).
std::unique_ptr<Transform> makeNormalize(const Normalization& norm);

// A dataset with its transform and seed: what a loader worker runs for one sample. The
// sample's randomness is SampleRng(seed, epoch, index): the same sample in the same epoch gets
// the same bytes whichever thread loads it. InputError from the constructor when the
// transform cannot take the dataset's images.
//
// As a SampleSource: float32 [C, H, W] inputs (outputShape()) and int64 scalar labels.
class SamplePipeline : public SampleSource {
 public:
  SamplePipeline(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Transform> transform,
                 uint64_t seed);
  const Dataset& dataset() const { return *dataset_; }
  ImageShape outputShape() const { return outputShape_; }
  // Loads sample `index` for `epoch` into `out` (outputShape().numel() floats); returns its label.
  int64_t load(int64_t epoch, int64_t index, float* out, std::vector<uint8_t>& scratch) const;
  // Tells the dataset that sample `index` is loaded next (Dataset::prefetch); only a hint.
  void prefetch(int64_t index) const override { dataset_->prefetch(index); }

  std::string describe() const override { return dataset_->describe(); }
  int64_t size() const override { return dataset_->size(); }
  SampleSpec inputSpec() const override;
  SampleSpec targetSpec() const override { return SampleSpec{ArrayDtype::Int64, {}}; }
  int numClasses() const override { return dataset_->numClasses(); }
  void loadSample(int64_t epoch, int64_t index, void* input, void* target,
                  std::vector<uint8_t>& scratch) const override {
    *static_cast<int64_t*>(target) = load(epoch, index, static_cast<float*>(input), scratch);
  }

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const Transform> transform_;
  uint64_t seed_;
  ImageShape outputShape_;
};

}  // namespace tl::data
