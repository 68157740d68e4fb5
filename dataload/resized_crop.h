// ImageNet-style transforms for images of any size (image folders): torchvision's
// RandomResizedCrop + RandomHorizontalFlip + Normalize for training, and Resize + CenterCrop +
// Normalize for evaluation, each fused into one pass that writes float CHW into the batch.
//
// Training, with the draws in this order (they define every augmented sample's bytes):
//   up to 10 attempts:
//     area_fraction = minScale + (maxScale - minScale) * rng.uniform()
//     log_ratio     = log(minRatio) + (log(maxRatio) - log(minRatio)) * rng.uniform()
//     w = round(sqrt(H * W * area_fraction * exp(log_ratio)))     (round: half to even, as
//     h = round(sqrt(H * W * area_fraction / exp(log_ratio)))      Python's round)
//     if 0 < w <= W and 0 < h <= H:
//       top = rng.uniformInt(0, H - h), left = rng.uniformInt(0, W - w); done
//   otherwise the centre crop whose ratio is W/H clamped to [minRatio, maxRatio] (no draws)
//   flip = hflip && rng.bernoulli(0.5)
// This is torchvision's RandomResizedCrop.get_params with tl's per-sample draws; the geometry
// is always computed on the image's full (stored) size. The crop is then resized to size x size
// by bilinear interpolation (resize_kernel.h: align_corners=False, no antialias, samples
// clamped to the crop's own edges as when torchvision resizes the cropped image), mirrored
// when flip is set, and normalized (ImageNet mean and std by default).
//
// Evaluation (augment false, no draws): the shorter side is resized to
// round(size / evalCropFraction) (256 for 224), the longer one to floor(that * long / short),
// and the centre size x size is taken at offsets round((resized - size) / 2), as torchvision's
// Resize(int) + CenterCrop do. It is computed as one resampling of the original image, without
// the intermediate uint8 image, so values may differ from torchvision's by a rounding step.
//
// Reduced decode (reducedDecode, JPEG only): when the crop box is at least 2, 4 or 8 times the
// output size on both sides, the dataset decodes at 1/2, 1/4 or 1/8 of each side (libjpeg's
// scaled IDCT) and the same box, scaled, is resampled from that. The choice depends only on the
// stored size and the sample's draws, so it is as deterministic as the rest; the bytes differ
// slightly from a full-size decode (the IDCT averages where bilinear would skip pixels).
#pragma once

#include <memory>

#include "dataload/transforms.h"

namespace tl::data {

// ImageNet: mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225).
Normalization imagenetNormalization();

struct ResizedCropOptions {
  int size = 224;  // output side
  double minScale = 0.08, maxScale = 1.0;             // crop area as a fraction of the image
  double minRatio = 3.0 / 4.0, maxRatio = 4.0 / 3.0;  // crop width / height
  bool hflip = true;
  bool augment = true;              // false: the evaluation resize + centre crop, no draws
  double evalCropFraction = 0.875;  // evaluation: shorter side resized to size / this
  bool reducedDecode = true;        // let JPEG datasets decode at 1/2, 1/4 or 1/8
  Normalization norm = imagenetNormalization();
};

// A crop of the stored image, in whole pixels.
struct CropBox {
  int top = 0, left = 0, height = 0, width = 0;
};

// The RandomResizedCrop box for an H x W image (the attempts above; not the flip draw).
CropBox drawRandomResizedCrop(int height, int width, const ResizedCropOptions& options,
                              SampleRng& rng);

// Evaluation geometry: the resized image's size and the centre crop's offsets in it.
struct ResizeCentreCrop {
  int resizedHeight = 0, resizedWidth = 0, top = 0, left = 0;
};
ResizeCentreCrop resizeCentreCropGeometry(int height, int width, const ResizedCropOptions& options);

// The largest of 8, 4, 2 by which a boxHeight x boxWidth source box can be reduced and still
// cover size x size output pixels; 1 when none can.
int largestReduction(double boxHeight, double boxWidth, int size);

// Python's round(): to nearest, ties to even.
int roundHalfEven(double value);

// Training (augment) or evaluation transform. Takes images of any size with as many channels as
// the normalization has. InputError for size < 1, an invalid scale or ratio range, or an
// invalid normalization.
std::unique_ptr<Transform> makeResizedCrop(const ResizedCropOptions& options);

}  // namespace tl::data
