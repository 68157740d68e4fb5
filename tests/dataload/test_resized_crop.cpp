// RandomResizedCrop and the evaluation resize: the crop boxes against torchvision's algorithm
// written out independently, and exact output values against bilinear interpolation computed
// here in double precision for hand-made images whose weights are exact binary fractions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dataload/resized_crop.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::inputErrorOf;

// torchvision.transforms.RandomResizedCrop.get_params, from its documentation, with the
// generator's draws in the documented order. std::nearbyint is Python's round (ties to even).
CropBox torchvisionBox(int height, int width, const ResizedCropOptions& o, SampleRng& rng) {
  const double area = double(height) * width;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double u1 = rng.uniform();
    const double u2 = rng.uniform();
    const double targetArea = area * (o.minScale + (o.maxScale - o.minScale) * u1);
    const double logLow = std::log(o.minRatio), logHigh = std::log(o.maxRatio);
    const double aspect = std::exp(logLow + (logHigh - logLow) * u2);
    const int w = int(std::nearbyint(std::sqrt(targetArea * aspect)));
    const int h = int(std::nearbyint(std::sqrt(targetArea / aspect)));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int top = int(rng.uniformInt(0, height - h));
      const int left = int(rng.uniformInt(0, width - w));
      return {top, left, h, w};
    }
  }
  const double inRatio = double(width) / height;
  int w = width, h = height;
  if (inRatio < o.minRatio) {
    h = int(std::nearbyint(w / o.minRatio));
  } else if (inRatio > o.maxRatio) {
    w = int(std::nearbyint(h * o.maxRatio));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

TEST(ResizedCrop, BoxesFollowTorchvisionForManyDraws) {
  ResizedCropOptions options;
  int fallbacks = 0, draws = 0;
  const int sizes[][2] = {{224, 224}, {375, 500}, {500, 333}, {64, 96}, {17, 5}, {1000, 10},
                          {10, 1000}, {1, 1}, {3, 4}};
  for (const auto& size : sizes) {
    for (int64_t index = 0; index < 400; ++index) {
      SampleRng ours(7, 2, index), theirs(7, 2, index);
      const CropBox got = drawRandomResizedCrop(size[0], size[1], options, ours);
      const CropBox want = torchvisionBox(size[0], size[1], options, theirs);
      ASSERT_EQ(std::vector<int>({got.top, got.left, got.height, got.width}),
                std::vector<int>({want.top, want.left, want.height, want.width}))
          << size[0] << "x" << size[1] << " sample " << index;
      // Both consumed the same draws: the flip draw that follows is the same.
      ASSERT_EQ(ours.nextU32(), theirs.nextU32());
      ASSERT_TRUE(got.height >= 1 && got.top + got.height <= size[0]);
      ASSERT_TRUE(got.width >= 1 && got.left + got.width <= size[1]);
      // The strips fit no attempt: full short side, long side round(10 * 4 / 3) = 13.
      const bool fallback = (got.height == 13 && got.width == 10) ||
                            (got.height == 10 && got.width == 13);
      fallbacks += fallback && (size[0] == 1000 || size[1] == 1000);
      ++draws;
    }
  }
  EXPECT_EQ(draws, 9 * 400);
  EXPECT_EQ(fallbacks, 800) << "the 1000x10 and 10x1000 images can only fall back";
  // The fallback box of a tall strip: full width, height round(10 / (3/4)) = 13, centred.
  SampleRng rng(1, 0, 0);
  const CropBox strip = drawRandomResizedCrop(1000, 10, options, rng);
  EXPECT_EQ(std::vector<int>({strip.top, strip.left, strip.height, strip.width}),
            std::vector<int>({493, 0, 13, 10}));
}

TEST(ResizedCrop, RoundsHalfToEvenLikePython) {
  EXPECT_EQ(roundHalfEven(0.5), 0);
  EXPECT_EQ(roundHalfEven(1.5), 2);
  EXPECT_EQ(roundHalfEven(2.5), 2);
  EXPECT_EQ(roundHalfEven(2.5000001), 3);
  EXPECT_EQ(roundHalfEven(0.49999999999999994), 0);
  EXPECT_EQ(roundHalfEven(255.99), 256);
}

// Bilinear interpolation of one channel as torch computes it (align_corners=False): output o
// of n reads source start + (o + 0.5) * length / n - 0.5, raised to `first`, the upper
// neighbour clamped to `last`. Rounded half up to a byte.
struct Axis {
  double start, length;
  int n, first, last;
};
int bilinearByte(const std::vector<uint8_t>& hwc, int width, int channels, int c,
                 const Axis& rows, const Axis& cols, int y, int x) {
  auto taps = [](const Axis& a, int o, int& lower, int& upper, double& fraction) {
    const double source = std::max(a.start + (o + 0.5) * a.length / a.n - 0.5, double(a.first));
    lower = int(std::floor(source));
    upper = std::min(lower + 1, a.last);
    fraction = source - lower;
  };
  int y0, y1, x0, x1;
  double fy, fx;
  taps(rows, y, y0, y1, fy);
  taps(cols, x, x0, x1, fx);
  auto at = [&](int yy, int xx) { return double(hwc[(size_t(yy) * width + xx) * channels + c]); };
  const double top = (1 - fx) * at(y0, x0) + fx * at(y0, x1);
  const double bottom = (1 - fx) * at(y1, x0) + fx * at(y1, x1);
  const double value = (1 - fy) * top + fy * bottom;
  return int(std::floor(value + 0.5));
}

// A hand-made image whose neighbouring pixels differ a lot, so a wrong tap shows.
std::vector<uint8_t> handMade(int height, int width) {
  std::vector<uint8_t> hwc(size_t(height) * width * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        hwc[(size_t(y) * width + x) * 3 + c] = uint8_t((y * 37 + x * 11 + c * 70) % 256);
      }
    }
  }
  return hwc;
}

std::vector<float> run(const Transform& transform, const std::vector<uint8_t>& hwc, int height,
                       int width, SampleRng rng) {
  const ImageShape shape{3, height, width};
  std::vector<float> out(size_t(transform.outputShape(shape).numel()), -999.0f);
  transform.apply(ImageView(hwc.data(), shape), rng, out.data());
  return out;
}

// Compares the transform's output with the reference for a crop `box` resized to `size`.
void expectResizedCrop(const std::vector<float>& got, const std::vector<uint8_t>& hwc, int width,
                       const Axis& rows, const Axis& cols, bool flip, int size) {
  const Normalization norm = imagenetNormalization();
  int checked = 0;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < size; ++y) {
      for (int x = 0; x < size; ++x) {
        const int sourceX = flip ? size - 1 - x : x;
        const int byte = bilinearByte(hwc, width, 3, c, rows, cols, y, sourceX);
        const float want = normalizedValue(uint8_t(byte), norm.mean[c], norm.std[c]);
        ASSERT_EQ(got[(size_t(c) * size + y) * size + x], want)
            << "channel " << c << " y " << y << " x " << x << " flip " << flip;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 3 * size * size);
}

TEST(ResizedCrop, ExactValuesForAnUpscaledCrop) {
  // 8x8 image, crops of exactly 4x4 (scale 1/4, ratio 1) resized to 8: weights 1/4 and 3/4.
  const std::vector<uint8_t> hwc = handMade(8, 8);
  ResizedCropOptions options;
  options.size = 8;
  options.minScale = options.maxScale = 0.25;
  options.minRatio = options.maxRatio = 1.0;
  auto transform = makeResizedCrop(options);
  int flips = 0;
  for (int64_t index = 0; index < 24; ++index) {
    SampleRng rng(3, 0, index);
    const std::vector<float> got = run(*transform, hwc, 8, 8, rng);
    const CropBox box = drawRandomResizedCrop(8, 8, options, rng);
    ASSERT_EQ(box.height, 4);
    const bool flip = rng.bernoulli(0.5);
    flips += flip;
    const Axis rows{double(box.top), 4, 8, box.top, box.top + 3};
    const Axis cols{double(box.left), 4, 8, box.left, box.left + 3};
    expectResizedCrop(got, hwc, 8, rows, cols, flip, 8);
  }
  EXPECT_GT(flips, 0);
  EXPECT_LT(flips, 24);
}

TEST(ResizedCrop, ExactValuesForADownscaledWholeImage) {
  // 12x12 image, the whole of it (scale 1, ratio 1) resized to 8: weights 1/4 and 3/4.
  const std::vector<uint8_t> hwc = handMade(12, 12);
  ResizedCropOptions options;
  options.size = 8;
  options.minScale = options.maxScale = 1.0;
  options.minRatio = options.maxRatio = 1.0;
  options.hflip = false;
  const std::vector<float> got = run(*makeResizedCrop(options), hwc, 12, 12, SampleRng(0, 0, 0));
  expectResizedCrop(got, hwc, 12, Axis{0, 12, 8, 0, 11}, Axis{0, 12, 8, 0, 11}, false, 8);
}

TEST(ResizedCrop, OneChannelImagesGiveTheSamePlanes) {
  // The 3-channel kernel has a vector path, others a scalar one: each plane of a 3-channel
  // result must equal the 1-channel result of that channel alone.
  const int height = 37, width = 53;
  const std::vector<uint8_t> hwc = handMade(height, width);
  const Normalization norm = imagenetNormalization();
  ResizedCropOptions rgbOptions;
  rgbOptions.size = 24;
  auto rgb = makeResizedCrop(rgbOptions);
  for (int64_t index = 0; index < 20; ++index) {
    const std::vector<float> all = run(*rgb, hwc, height, width, SampleRng(2, 1, index));
    for (int c = 0; c < 3; ++c) {
      ResizedCropOptions greyOptions = rgbOptions;
      greyOptions.norm = {{norm.mean[size_t(c)]}, {norm.std[size_t(c)]}};
      std::vector<uint8_t> plane(size_t(height) * width);
      for (size_t p = 0; p < plane.size(); ++p) plane[p] = hwc[3 * p + size_t(c)];
      std::vector<float> grey(size_t(24 * 24));
      SampleRng rng(2, 1, index);
      makeResizedCrop(greyOptions)
          ->apply(ImageView(plane.data(), ImageShape{1, height, width}), rng, grey.data());
      ASSERT_TRUE(std::equal(grey.begin(), grey.end(), all.begin() + c * 24 * 24))
          << "sample " << index << " channel " << c;
    }
  }
}

TEST(ResizedCrop, EvaluationResizesTheShorterSideThenCropsTheCentre) {
  ResizedCropOptions options;
  options.augment = false;
  ResizeCentreCrop g = resizeCentreCropGeometry(300, 400, options);  // size 224: Resize(256)
  EXPECT_EQ(std::vector<int>({g.resizedHeight, g.resizedWidth, g.top, g.left}),
            std::vector<int>({256, 341, 16, 58}));  // left = round(58.5) = 58
  // 16x24 to size 7: shorter side round(8) = 8, so 8x12, crop offsets round(0.5) = 0 and
  // round(2.5) = 2; the resized pixel (r, c) reads source (2r + 0.5, 2c + 0.5).
  options.size = 7;
  g = resizeCentreCropGeometry(16, 24, options);
  ASSERT_EQ(std::vector<int>({g.resizedHeight, g.resizedWidth, g.top, g.left}),
            std::vector<int>({8, 12, 0, 2}));
  const std::vector<uint8_t> hwc = handMade(16, 24);
  const std::vector<float> got = run(*makeResizedCrop(options), hwc, 16, 24, SampleRng(0, 0, 0));
  // The crop of the resized image: its pixel (y, x) is resized pixel (y, x + 2), interpolated
  // over the whole source image (the resize happens before the crop).
  expectResizedCrop(got, hwc, 24, Axis{0, 14, 7, 0, 15}, Axis{2 * 2.0, 14, 7, 0, 23}, false, 7);
}

TEST(ResizedCrop, EvaluationMakesNoDrawsAndAugmentOffUsesIt) {
  ResizedCropOptions options;
  options.size = 16;
  options.augment = false;
  auto transform = makeResizedCrop(options);
  const std::vector<uint8_t> hwc = handMade(40, 30);
  SampleRng a(1, 0, 5), b(99, 3, 7);
  EXPECT_EQ(run(*transform, hwc, 40, 30, a), run(*transform, hwc, 40, 30, b));
  EXPECT_EQ(transform->outputShape(ImageShape{3, 0, 0}), (ImageShape{3, 16, 16}));
}

TEST(ResizedCrop, ReductionFollowsTheCropBox) {
  EXPECT_EQ(largestReduction(224, 224, 224), 1);
  EXPECT_EQ(largestReduction(447, 1000, 224), 1);
  EXPECT_EQ(largestReduction(448, 448, 224), 2);
  EXPECT_EQ(largestReduction(900, 1000, 224), 4);
  EXPECT_EQ(largestReduction(2000, 1792, 224), 8);
  ResizedCropOptions options;
  options.size = 32;
  options.minScale = 0.9;
  auto transform = makeResizedCrop(options);
  // A 600x800 image cropped to >= 90% of its area: a box of at least ~450 px, 8 x 32 = 256.
  EXPECT_EQ(transform->decodeReduction(ImageShape{3, 600, 800}, SampleRng(0, 0, 1)), 8);
  options.reducedDecode = false;
  auto fullSize = makeResizedCrop(options);
  EXPECT_EQ(fullSize->decodeReduction(ImageShape{3, 600, 800}, SampleRng(0, 0, 1)), 1);
}

TEST(ResizedCrop, InvalidOptionsAreInputErrors) {
  ResizedCropOptions options;
  options.size = 0;
  expectContains(inputErrorOf([&] { makeResizedCrop(options); }), {"size must be at least 1"});
  options = ResizedCropOptions{};
  options.minScale = 0.9;
  options.maxScale = 0.5;
  expectContains(inputErrorOf([&] { makeResizedCrop(options); }), {"crop scale range"});
  options = ResizedCropOptions{};
  options.minRatio = 2;
  expectContains(inputErrorOf([&] { makeResizedCrop(options); }), {"crop ratio range"});
  auto transform = makeResizedCrop(ResizedCropOptions{});
  expectContains(inputErrorOf([&] { transform->outputShape(ImageShape{1, 28, 28}); }),
                 {"images have 1 channels but the normalization has 3"});
}

}  // namespace
}  // namespace tl::data
