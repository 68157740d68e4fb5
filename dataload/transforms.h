// Transforms from a uint8 HWC image to a float CHW tensor slot, with per-sample randomness.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dataload/dataset.h"
#include "dataload/sample_rng.h"

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

class Transform {
 public:
  virtual ~Transform() = default;
  virtual ImageShape outputShape(const ImageShape& input) const = 0;
  // Writes outputShape(in.shape).numel() floats, CHW, to `out`. Draws only from `rng`.
  virtual void apply(const ImageView& in, SampleRng& rng, float* out) const = 0;
};

struct CropFlipOptions {
  int cropSize = 32;      // 0: no crop
  int padding = 4;        // zero padding on each side before the random crop
  bool hflip = true;      // horizontal flip with p = 0.5
  bool augment = true;    // false: no crop, no flip (evaluation, --augment off)
  Normalization norm;
};

// Random crop (with zero padding) + horizontal flip + normalize, fused in one pass.
std::unique_ptr<Transform> makeCropFlipNormalize(const CropFlipOptions& options);

// Normalize only (evaluation).
std::unique_ptr<Transform> makeNormalize(const Normalization& norm);

// A dataset with its transform and seed: what a loader worker runs for one sample.
class SamplePipeline {
 public:
  SamplePipeline(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Transform> transform,
                 uint64_t seed);
  const Dataset& dataset() const { return *dataset_; }
  ImageShape outputShape() const { return outputShape_; }
  // Loads sample `index` for `epoch` into `out` (outputShape().numel() floats); returns its label.
  int64_t load(int64_t epoch, int64_t index, float* out, std::vector<uint8_t>& scratch) const;

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const Transform> transform_;
  uint64_t seed_;
  ImageShape outputShape_;
};

}  // namespace tl::data
