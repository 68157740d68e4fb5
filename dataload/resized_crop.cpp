#include "dataload/resized_crop.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/check.h"
#include "dataload/resize_kernel.h"

namespace tl::data {

Normalization imagenetNormalization() {
  return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
}

int roundHalfEven(double value) {
  // std::round breaks ties away from zero; a tie's even neighbour is twice round(value / 2),
  // both exact in binary floating point.
  const bool tie = std::fabs(value - std::trunc(value)) == 0.5;
  return int(tie ? 2 * std::round(value / 2) : std::round(value));
}

CropBox drawRandomResizedCrop(int height, int width, const ResizedCropOptions& options,
                              SampleRng& rng) {
  const double area = double(height) * double(width);
  const double logMinRatio = std::log(options.minRatio);
  const double logMaxRatio = std::log(options.maxRatio);
  for (int attempt = 0; attempt < 10; ++attempt) {
    // Named statements: the draws must happen in this order.
    const double areaFraction =
        options.minScale + (options.maxScale - options.minScale) * rng.uniform();
    const double aspect = std::exp(logMinRatio + (logMaxRatio - logMinRatio) * rng.uniform());
    const double targetArea = area * areaFraction;
    const int w = roundHalfEven(std::sqrt(targetArea * aspect));
    const int h = roundHalfEven(std::sqrt(targetArea / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      CropBox box;
      box.height = h;
      box.width = w;
      box.top = int(rng.uniformInt(0, height - h));
      box.left = int(rng.uniformInt(0, width - w));
      return box;
    }
  }
  // No attempt fitted: the whole image, cut to the nearest allowed aspect ratio.
  CropBox box{0, 0, height, width};
  const double ratio = double(width) / double(height);
  if (ratio < options.minRatio) {
    box.height = roundHalfEven(width / options.minRatio);
  } else if (ratio > options.maxRatio) {
    box.width = roundHalfEven(height * options.maxRatio);
  }
  box.top = (height - box.height) / 2;
  box.left = (width - box.width) / 2;
  return box;
}

ResizeCentreCrop resizeCentreCropGeometry(int height, int width,
                                          const ResizedCropOptions& options) {
  const int shorterSide = roundHalfEven(options.size / options.evalCropFraction);
  ResizeCentreCrop g;
  if (width <= height) {
    g.resizedWidth = shorterSide;
    g.resizedHeight = int(int64_t(shorterSide) * height / width);
  } else {
    g.resizedHeight = shorterSide;
    g.resizedWidth = int(int64_t(shorterSide) * width / height);
  }
  g.top = roundHalfEven((g.resizedHeight - options.size) / 2.0);
  g.left = roundHalfEven((g.resizedWidth - options.size) / 2.0);
  return g;
}

int largestReduction(double boxHeight, double boxWidth, int size) {
  for (int reduction : {8, 4, 2}) {
    if (boxHeight >= double(size) * reduction && boxWidth >= double(size) * reduction) {
      return reduction;
    }
  }
  return 1;
}

namespace {

// What one sample does, in the stored image's coordinates.
struct Plan {
  struct {
    double top = 0, left = 0, height = 0, width = 0;
  } box;                                 // the source area resized to the output
  double clampTop = 0, clampBottom = 0;  // rows the samples stay in: [clampTop, clampBottom)
  double clampLeft = 0, clampRight = 0;
  bool flip = false;
};

class ResizedCrop : public Transform {
 public:
  explicit ResizedCrop(const ResizedCropOptions& options) : options_(options) {
    TL_REQUIRE(options_.size >= 1, "resized crop size must be at least 1, got ", options_.size);
    TL_REQUIRE(options_.minScale > 0 && options_.minScale <= options_.maxScale &&
                   options_.maxScale <= 1,
               "crop scale range must satisfy 0 < min <= max <= 1, got ", options_.minScale,
               "..", options_.maxScale);
    TL_REQUIRE(options_.minRatio > 0 && options_.minRatio <= options_.maxRatio,
               "crop ratio range must satisfy 0 < min <= max, got ", options_.minRatio, "..",
               options_.maxRatio);
    TL_REQUIRE(options_.evalCropFraction > 0 && options_.evalCropFraction <= 1,
               "evaluation crop fraction must be in (0, 1], got ", options_.evalCropFraction);
    table_ = normalizationTable(options_.norm);
  }

  ImageShape outputShape(const ImageShape& input) const override {
    TL_REQUIRE(input.channels == int(options_.norm.mean.size()), "images have ", input.channels,
               " channels but the normalization has ", options_.norm.mean.size());
    return ImageShape{input.channels, options_.size, options_.size};
  }

  int decodeReduction(const ImageShape& stored, SampleRng rng) const override {
    if (!options_.reducedDecode) return 1;
    const Plan plan = planFor(stored.height, stored.width, rng);
    return largestReduction(plan.box.height, plan.box.width, options_.size);
  }

  void apply(const ImageView& in, SampleRng& rng, float* out) const override {
    TL_CHECK_EQ(in.shape.channels, int(options_.norm.mean.size()));
    const ImageShape full = in.storedShape.height > 0 ? in.storedShape : in.shape;
    TL_CHECK(full.height > 0 && full.width > 0, "empty image");
    const Plan plan = planFor(full.height, full.width, rng);
    // A pixel of the reduced image covers `reduction` stored pixels per side, so the stored
    // coordinates divide by it; the clamp edges round outwards to whole reduced pixels.
    const double r = in.reduction;
    detail::ResampleRegion region;
    region.top = plan.box.top / r;
    region.left = plan.box.left / r;
    region.height = plan.box.height / r;
    region.width = plan.box.width / r;
    region.firstRow = int(std::floor(plan.clampTop / r));
    region.lastRow = std::min(in.shape.height, int(std::ceil(plan.clampBottom / r))) - 1;
    region.firstCol = int(std::floor(plan.clampLeft / r));
    region.lastCol = std::min(in.shape.width, int(std::ceil(plan.clampRight / r))) - 1;
    detail::resampleBilinear(in.pixels, in.shape.channels, in.shape.height, in.shape.width,
                             region, options_.size, options_.size, plan.flip, table_.data(), out);
  }

 private:
  Plan planFor(int height, int width, SampleRng& rng) const {
    Plan plan;
    if (options_.augment) {
      const CropBox crop = drawRandomResizedCrop(height, width, options_, rng);
      plan.box.top = crop.top;
      plan.box.left = crop.left;
      plan.box.height = crop.height;
      plan.box.width = crop.width;
      plan.clampTop = crop.top;
      plan.clampBottom = crop.top + crop.height;
      plan.clampLeft = crop.left;
      plan.clampRight = crop.left + crop.width;
      plan.flip = options_.hflip && rng.bernoulli(0.5);
      return plan;
    }
    // Output pixel y is resized pixel top + y, i.e. stored row (top + y + 0.5) * H / H' - 0.5.
    const ResizeCentreCrop g = resizeCentreCropGeometry(height, width, options_);
    const double rowScale = double(height) / g.resizedHeight;
    const double columnScale = double(width) / g.resizedWidth;
    plan.box.top = g.top * rowScale;
    plan.box.left = g.left * columnScale;
    plan.box.height = options_.size * rowScale;
    plan.box.width = options_.size * columnScale;
    plan.clampBottom = height;
    plan.clampRight = width;
    return plan;
  }

  ResizedCropOptions options_;
  std::vector<float> table_;  // 256 normalized values per channel
};

}  // namespace

std::unique_ptr<Transform> makeResizedCrop(const ResizedCropOptions& options) {
  return std::make_unique<ResizedCrop>(options);
}

}  // namespace tl::data
