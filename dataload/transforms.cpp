#include "dataload/transforms.h"

#include <cmath>
#include <utility>

#include "common/check.h"
#include "dataload/crop_kernel.h"

namespace tl::data {

Normalization cifarNormalization() { return {{0.4914f, 0.4822f, 0.4465f}, {0.2023f, 0.1994f, 0.2010f}}; }
Normalization mnistNormalization() { return {{0.1307f}, {0.3081f}}; }
Normalization fashionMnistNormalization() { return {{0.2860f}, {0.3530f}}; }

Normalization normalizationFor(const std::string& kind) {
  if (kind == "cifar10") return cifarNormalization();
  if (kind == "mnist") return mnistNormalization();
  if (kind == "fashion-mnist") return fashionMnistNormalization();
  inputError("no normalization is known for dataset kind '", kind, "'");
}

float normalizedValue(uint8_t pixel, float mean, float std) {
  // Three separately rounded float operations, as torchvision's tensor ops perform them
  // (division, not multiplication by a reciprocal, which rounds differently).
  const float scaled = float(pixel) / 255.0f;
  const float centred = scaled - mean;
  return centred / std;
}

std::vector<float> normalizationTable(const Normalization& norm) {
  TL_REQUIRE(!norm.mean.empty() && norm.mean.size() == norm.std.size(),
             "normalization needs one mean and one std per channel, got ", norm.mean.size(),
             " means and ", norm.std.size(), " stds");
  std::vector<float> table(norm.mean.size() * 256);
  for (size_t c = 0; c < norm.mean.size(); ++c) {
    TL_REQUIRE(std::isfinite(norm.std[c]) && norm.std[c] > 0 && std::isfinite(norm.mean[c]),
               "normalization of channel ", c, " is invalid: mean ", norm.mean[c], ", std ",
               norm.std[c], " (std must be positive)");
    for (int byte = 0; byte < 256; ++byte) {
      table[c * 256 + size_t(byte)] = normalizedValue(uint8_t(byte), norm.mean[c], norm.std[c]);
    }
  }
  return table;
}

CropFlipOptions cifarAugmentation() {
  CropFlipOptions options;
  options.cropSize = 32;
  options.padding = 4;
  options.hflip = true;
  options.norm = cifarNormalization();
  return options;
}

CropFlipOptions mnistLikeAugmentation(const Normalization& norm) {
  CropFlipOptions options;
  options.cropSize = 0;
  options.padding = 2;
  options.hflip = false;
  options.norm = norm;
  return options;
}

CropFlipOptions augmentationFor(const std::string& kind) {
  if (kind == "cifar10") return cifarAugmentation();
  return mnistLikeAugmentation(normalizationFor(kind));
}

namespace {

// Crop (with padding) + optional flip + normalize, with normalize-only as its special case
// (crop = input size, padding 0, augment off).
class CropFlipNormalize : public Transform {
 public:
  explicit CropFlipNormalize(const CropFlipOptions& options) : options_(options) {
    table_ = normalizationTable(options_.norm);
    TL_REQUIRE(options_.cropSize >= 0, "crop size must not be negative, got ", options_.cropSize);
    TL_REQUIRE(options_.padding >= 0, "crop padding must not be negative, got ",
               options_.padding);
  }

  ImageShape outputShape(const ImageShape& input) const override {
    TL_REQUIRE(input.channels == int(options_.norm.mean.size()), "images have ", input.channels,
               " channels but the normalization has ", options_.norm.mean.size());
    TL_REQUIRE(input.height > 0 && input.width > 0,
               "the crop transform needs images of one fixed size, got ", input.height, "x",
               input.width);
    const int padding = options_.padding;
    const int cropHeight = options_.cropSize > 0 ? options_.cropSize : input.height;
    const int cropWidth = options_.cropSize > 0 ? options_.cropSize : input.width;
    TL_REQUIRE(cropHeight <= input.height + 2 * padding && cropWidth <= input.width + 2 * padding,
               "crop ", cropHeight, "x", cropWidth, " does not fit images of ", input.height, "x",
               input.width, " with padding ", padding);
    return ImageShape{input.channels, cropHeight, cropWidth};
  }

  void apply(const ImageView& in, SampleRng& rng, float* out) const override {
    const ImageShape shape = in.shape;
    TL_CHECK_EQ(shape.channels, int(options_.norm.mean.size()));
    const int padding = options_.padding;
    detail::CropWindow window;
    window.height = options_.cropSize > 0 ? options_.cropSize : shape.height;
    window.width = options_.cropSize > 0 ? options_.cropSize : shape.width;
    const int slackY = shape.height + 2 * padding - window.height;
    const int slackX = shape.width + 2 * padding - window.width;
    TL_CHECK(slackY >= 0 && slackX >= 0, "crop does not fit");
    if (options_.augment) {
      window.top = int(rng.uniformInt(0, slackY));
      window.left = int(rng.uniformInt(0, slackX));
      window.flip = options_.hflip && rng.bernoulli(0.5);
    } else {
      window.top = slackY / 2;
      window.left = slackX / 2;
    }
    detail::writeCropWindow(in.pixels, shape.channels, shape.height, shape.width, padding, window,
                            table_.data(), out);
  }

 private:
  CropFlipOptions options_;
  std::vector<float> table_;  // 256 normalized values per channel
};

}  // namespace

std::unique_ptr<Transform> makeCropFlipNormalize(const CropFlipOptions& options) {
  return std::make_unique<CropFlipNormalize>(options);
}

std::unique_ptr<Transform> makeNormalize(const Normalization& norm) {
  CropFlipOptions options;
  options.cropSize = 0;
  options.padding = 0;
  options.hflip = false;
  options.augment = false;
  options.norm = norm;
  return std::make_unique<CropFlipNormalize>(options);
}

SamplePipeline::SamplePipeline(std::shared_ptr<const Dataset> dataset,
                               std::shared_ptr<const Transform> transform, uint64_t seed)
    : dataset_(std::move(dataset)), transform_(std::move(transform)), seed_(seed) {
  TL_CHECK(dataset_ && transform_);
  outputShape_ = transform_->outputShape(dataset_->imageShape());
}

SampleSpec SamplePipeline::inputSpec() const {
  return SampleSpec{ArrayDtype::Float32,
                    {outputShape_.channels, outputShape_.height, outputShape_.width}};
}

int64_t SamplePipeline::load(int64_t epoch, int64_t index, float* out,
                             std::vector<uint8_t>& scratch) const {
  TL_CHECK(index >= 0 && index < dataset_->size(), "sample index ", index, " outside ",
           dataset_->describe());
  SampleRng rng(seed_, epoch, index);
  // The transform is asked with a copy of the generator (by value), so the draws apply() makes
  // are the same whether or not the dataset asks.
  auto pick = [&](const ImageShape& stored) { return transform_->decodeReduction(stored, rng); };
  const ImageView image = dataset_->imageAtReduction(index, scratch, pick);
  // The output buffer was sized for the dataset's shape; another shape would overrun it.
  // Datasets of varying sizes (height and width 0) need a transform that takes any size.
  const ImageShape expected = dataset_->imageShape();
  TL_CHECK(image.shape.channels == expected.channels &&
               (expected.height == 0 || image.shape == expected),
           "image ", index, " has another shape");
  transform_->apply(image, rng, out);
  return dataset_->label(index);
}

}  // namespace tl::data
