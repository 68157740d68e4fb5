// Transforms: exact values against hand-made images, a naive reference implementation and
// float bits printed by PyTorch.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <tuple>

#include "dataload/memory_dataset.h"
#include "dataload/transforms.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::inputErrorOf;

Normalization halfQuarter(int channels) {
  return {std::vector<float>(size_t(channels), 0.5f), std::vector<float>(size_t(channels), 0.25f)};
}

// torchvision's ToTensor + Normalize, one float operation at a time.
float torchvisionValue(int byte, float mean, float std) {
  float scaled = float(byte) / 255.0f;
  float centred = scaled - mean;
  return centred / std;
}

std::vector<float> run(const Transform& transform, const std::vector<uint8_t>& hwc,
                       ImageShape shape, SampleRng& rng) {
  std::vector<float> out(size_t(transform.outputShape(shape).numel()), -999.0f);
  transform.apply(ImageView{hwc.data(), shape}, rng, out.data());
  return out;
}

// The draws the crop/flip transform makes, in its documented order.
struct Draws {
  int64_t top, left;
  bool flip;
};
Draws drawsFor(uint64_t seed, int64_t epoch, int64_t index, int slackY, int slackX) {
  SampleRng rng(seed, epoch, index);
  Draws d;
  d.top = rng.uniformInt(0, slackY);
  d.left = rng.uniformInt(0, slackX);
  d.flip = rng.bernoulli(0.5);
  return d;
}

TEST(Transforms, HandMadeCropAndFlip) {
  // 3x3 one-channel image 1..9, crop 3 with padding 1: find a key whose draws are top 0,
  // left 2, flip, then compare with the result worked out by hand:
  //   padded 5x5      window rows 0-2, cols 2-4     mirrored
  //   0 0 0 0 0       0 0 0                          0 0 0
  //   0 1 2 3 0       2 3 0                          0 3 2
  //   0 4 5 6 0       5 6 0                          0 6 5
  //   0 7 8 9 0
  //   0 0 0 0 0
  const std::vector<uint8_t> image = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  CropFlipOptions options;
  options.cropSize = 3;
  options.padding = 1;
  options.norm = halfQuarter(1);
  auto transform = makeCropFlipNormalize(options);
  int64_t index = 0;
  while (true) {
    Draws d = drawsFor(99, 0, index, 2, 2);
    if (d.top == 0 && d.left == 2 && d.flip) break;
    ASSERT_LT(++index, 10000);
  }
  SampleRng rng(99, 0, index);
  const std::vector<int> expectedBytes = {0, 0, 0, 0, 3, 2, 0, 6, 5};
  std::vector<float> out = run(*transform, image, {1, 3, 3}, rng);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i], torchvisionValue(expectedBytes[i], 0.5f, 0.25f)) << "position " << i;
  }
  EXPECT_EQ(out[0], -2.0f);  // padding: (0 - 0.5) / 0.25
}

// Straight from the definition: build the padded image, cut the window, mirror, normalize.
std::vector<float> reference(const std::vector<uint8_t>& hwc, ImageShape shape, int crop,
                             int padding, const Draws& d, const Normalization& norm) {
  const int paddedH = shape.height + 2 * padding, paddedW = shape.width + 2 * padding;
  std::vector<int> padded(size_t(paddedH * paddedW * shape.channels), 0);
  for (int y = 0; y < shape.height; ++y)
    for (int x = 0; x < shape.width; ++x)
      for (int c = 0; c < shape.channels; ++c)
        padded[size_t(((y + padding) * paddedW + x + padding) * shape.channels + c)] =
            hwc[size_t((y * shape.width + x) * shape.channels + c)];
  std::vector<float> out;
  for (int c = 0; c < shape.channels; ++c)
    for (int y = 0; y < crop; ++y)
      for (int x = 0; x < crop; ++x) {
        int column = d.flip ? crop - 1 - x : x;
        int byte = padded[size_t(((d.top + y) * paddedW + d.left + column) * shape.channels + c)];
        out.push_back(torchvisionValue(byte, norm.mean[size_t(c)], norm.std[size_t(c)]));
      }
  return out;
}

std::vector<uint8_t> randomImage(ImageShape shape, uint64_t seed) {
  SampleRng rng(seed, 0, 0);
  std::vector<uint8_t> image(size_t(shape.numel()));
  for (auto& byte : image) byte = uint8_t(rng.nextU32());
  return image;
}

TEST(Transforms, CifarCropFlipNormalizeMatchesTheDefinitionBitForBit) {
  const ImageShape shape{3, 32, 32};
  const std::vector<uint8_t> image = randomImage(shape, 1);
  auto transform = makeCropFlipNormalize(cifarAugmentation());
  ASSERT_EQ(transform->outputShape(shape), shape);
  std::set<std::tuple<int64_t, int64_t, bool>> seen;
  for (int64_t index = 0; index < 1500; ++index) {
    Draws d = drawsFor(5, 3, index, 8, 8);
    seen.insert({d.top, d.left, d.flip});
    SampleRng rng(5, 3, index);
    std::vector<float> out = run(*transform, image, shape, rng);
    std::vector<float> expected = reference(image, shape, 32, 4, d, cifarNormalization());
    ASSERT_EQ(std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)), 0)
        << "index " << index << " top " << d.top << " left " << d.left << " flip " << d.flip;
  }
  EXPECT_EQ(seen.size(), 9u * 9u * 2u);  // every offset, flipped and not
}

TEST(Transforms, OddShapesAndChannelCountsMatchTheDefinition) {
  // Non-square images, a crop smaller than the image, padding larger than needed, and the
  // generic channel path (2 and 4 channels).
  struct Case {
    ImageShape shape;
    int crop, padding;
  };
  for (const Case& c : {Case{{2, 5, 7}, 4, 3}, Case{{4, 6, 3}, 3, 0}, Case{{1, 9, 9}, 5, 6},
                        Case{{3, 8, 8}, 12, 2}}) {
    Normalization norm;
    for (int ch = 0; ch < c.shape.channels; ++ch) {
      norm.mean.push_back(0.1f * float(ch + 1));
      norm.std.push_back(0.2f + 0.05f * float(ch));
    }
    CropFlipOptions options{c.crop, c.padding, true, true, norm};
    auto transform = makeCropFlipNormalize(options);
    ASSERT_EQ(transform->outputShape(c.shape), (ImageShape{c.shape.channels, c.crop, c.crop}));
    const std::vector<uint8_t> image = randomImage(c.shape, 2);
    for (int64_t index = 0; index < 200; ++index) {
      Draws d = drawsFor(8, 0, index, c.shape.height + 2 * c.padding - c.crop,
                         c.shape.width + 2 * c.padding - c.crop);
      SampleRng rng(8, 0, index);
      std::vector<float> out = run(*transform, image, c.shape, rng);
      ASSERT_EQ(out, reference(image, c.shape, c.crop, c.padding, d, norm))
          << c.shape.channels << "x" << c.shape.height << "x" << c.shape.width << " index " << index;
    }
  }
}

TEST(Transforms, NormalizeOnlyAndAugmentOffAreTheNormalizedImage) {
  const ImageShape shape{3, 32, 32};
  const std::vector<uint8_t> image = randomImage(shape, 3);
  const Normalization norm = cifarNormalization();
  std::vector<float> expected;
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 32 * 32; ++p)
      expected.push_back(torchvisionValue(image[size_t(p * 3 + c)], norm.mean[size_t(c)], norm.std[size_t(c)]));
  CropFlipOptions off = cifarAugmentation();
  off.augment = false;
  for (const auto& transform : {makeNormalize(norm), makeCropFlipNormalize(off)}) {
    SampleRng rng(1, 2, 3);
    EXPECT_EQ(run(*transform, image, shape, rng), expected);
    // No draws were taken: the generator is still at its first value.
    EXPECT_EQ(rng.nextU32(), SampleRng(1, 2, 3).nextU32());
  }
}

// What --augment on means for MNIST-like data (docs/guide/data.md and --help say the same): a random
// shift by up to 2 px, never a flip; --augment off is the normalized image itself.
TEST(Transforms, MnistLikeAugmentationShiftsByUpToTwoPixelsWithoutFlips) {
  const ImageShape shape{1, 28, 28};
  const std::vector<uint8_t> image = randomImage(shape, 4);
  const Normalization norm = fashionMnistNormalization();
  auto plain = makeNormalize(norm);
  CropFlipOptions off = augmentationFor("fashion-mnist");
  off.augment = false;
  auto notAugmented = makeCropFlipNormalize(off);
  int shiftedSamples = 0;
  auto byDefault = makeCropFlipNormalize(augmentationFor("fashion-mnist"));
  for (int64_t index = 0; index < 20; ++index) {
    SampleRng a(0, 0, index), b(0, 0, index), c(0, 0, index);
    EXPECT_EQ(run(*notAugmented, image, shape, a), run(*plain, image, shape, b));
    SampleRng d(0, 0, index);
    shiftedSamples += run(*byDefault, image, shape, c) != run(*plain, image, shape, d);
  }
  EXPECT_GT(shiftedSamples, 10);  // 24 of 25 offsets move the image
  EXPECT_EQ(augmentationFor("mnist").padding, 2);
  EXPECT_FALSE(augmentationFor("mnist").hflip);
  CropFlipOptions translate = augmentationFor("fashion-mnist");
  auto shifted = makeCropFlipNormalize(translate);
  ASSERT_EQ(shifted->outputShape(shape), shape);
  for (int64_t index = 0; index < 50; ++index) {
    SampleRng rng(0, 0, index);
    Draws d = drawsFor(0, 0, index, 4, 4);
    d.flip = false;  // hflip is off for MNIST-like data: no flip draw
    EXPECT_EQ(run(*shifted, image, shape, rng), reference(image, shape, 28, 2, d, norm));
  }
}

// Float bits printed by PyTorch 1.13 for the bytes 0, 1, 128 and 255, and the sum of all 256
// bit patterns as signed int32, of torch.arange(256).float().div(255).sub(mean).div(std)
// (what torchvision's ToTensor + Normalize compute), for each normalization.
TEST(Transforms, NormalizedValuesAreTorchvisionBits) {
  struct Expected {
    float mean, std;
    uint32_t at0, at1, at128, at255;
    int64_t bitSum;
  };
  const Expected cases[] = {
      {0.4914f, 0.2023f, 0xc01b75d0, 0xc01a3836, 0x3d55d38f, 0x4020e6d1, 1754796158},
      {0.4822f, 0.1994f, 0xc01ac4b0, 0xc0198277, 0x3dcaf5ac, 0x402631d0, 8219308713},
      {0.4465f, 0.2010f, 0xc00e2b4e, 0xc00ceba5, 0x3e8d45f7, 0x40303d22, 27551388938},
      {0.1307f, 0.3081f, 0xbed93271, 0xbed2ae20, 0x3f9a3d7a, 0x4034933d, 198950837591},
      {0.2860f, 0.3530f, 0xbf4f6929, 0xbf4c911b, 0x3f1c9e13, 0x4001734f, 114112538923},
  };
  // A 16x16 one-channel image holding every byte once, through the transform.
  std::vector<uint8_t> everyByte(256);
  for (int b = 0; b < 256; ++b) everyByte[size_t(b)] = uint8_t(b);
  for (const Expected& e : cases) {
    auto transform = makeNormalize(Normalization{{e.mean}, {e.std}});
    SampleRng rng(0, 0, 0);
    std::vector<float> out = run(*transform, everyByte, {1, 16, 16}, rng);
    auto bits = [&](int b) {
      uint32_t u;
      std::memcpy(&u, &out[size_t(b)], 4);
      return u;
    };
    EXPECT_EQ(bits(0), e.at0) << e.mean;
    EXPECT_EQ(bits(1), e.at1) << e.mean;
    EXPECT_EQ(bits(128), e.at128) << e.mean;
    EXPECT_EQ(bits(255), e.at255) << e.mean;
    int64_t sum = 0;
    for (int b = 0; b < 256; ++b) sum += int32_t(bits(b));
    EXPECT_EQ(sum, e.bitSum) << e.mean;
  }
  // The normalization presets carry exactly these means and stds.
  EXPECT_EQ(cifarNormalization().mean, (std::vector<float>{0.4914f, 0.4822f, 0.4465f}));
  EXPECT_EQ(cifarNormalization().std, (std::vector<float>{0.2023f, 0.1994f, 0.2010f}));
  EXPECT_EQ(normalizationFor("mnist").mean, std::vector<float>{0.1307f});
}

TEST(Transforms, InvalidOptionsAndShapesAreInputErrors) {
  expectContains(inputErrorOf([] { makeNormalize(Normalization{{0.5f}, {0.0f}}); }),
                 {"channel 0", "std must be positive"});
  expectContains(inputErrorOf([] { makeNormalize(Normalization{{0.5f, 0.5f}, {0.2f}}); }),
                 {"2 means and 1 stds"});
  CropFlipOptions negative = cifarAugmentation();
  negative.padding = -1;
  expectContains(inputErrorOf([&] { makeCropFlipNormalize(negative); }), {"padding", "-1"});
  auto cifar = makeCropFlipNormalize(cifarAugmentation());
  expectContains(inputErrorOf([&] { cifar->outputShape({1, 28, 28}); }),
                 {"1 channels", "normalization has 3"});
  CropFlipOptions big = cifarAugmentation();
  big.cropSize = 41;
  expectContains(inputErrorOf([&] { makeCropFlipNormalize(big)->outputShape({3, 32, 32}); }),
                 {"crop 41x41", "32x32", "padding 4"});
  expectContains(inputErrorOf([] { normalizationFor("imagenet"); }), {"'imagenet'"});
}

TEST(SamplePipeline, LoadsWithTheSampleKeyAndReturnsTheLabel) {
  const ImageShape shape{3, 32, 32};
  std::vector<uint8_t> pixels = randomImage({3, 32, 32 * 3}, 6);  // three images
  auto dataset = std::make_shared<InMemoryDataset>("three", shape, 10, pixels,
                                                   std::vector<int64_t>{4, 7, 1});
  std::shared_ptr<const Transform> transform = makeCropFlipNormalize(cifarAugmentation());
  SamplePipeline pipeline(dataset, transform, 77);
  EXPECT_EQ(pipeline.outputShape(), shape);
  pipeline.prefetch(2);   // a hint: no effect on results,
  pipeline.prefetch(-1);  // and harmless out of range
  pipeline.prefetch(3);
  std::vector<uint8_t> scratch;
  std::vector<float> out(3072);
  EXPECT_EQ(pipeline.load(9, 1, out.data(), scratch), 7);
  SampleRng rng(77, 9, 1);
  std::vector<uint8_t> second(pixels.begin() + 3072, pixels.begin() + 6144);
  EXPECT_EQ(out, run(*transform, second, shape, rng));

  auto mono = std::make_shared<InMemoryDataset>("mono", ImageShape{1, 2, 2}, 2,
                                                std::vector<uint8_t>(4), std::vector<int64_t>{0});
  expectContains(inputErrorOf([&] { SamplePipeline(mono, transform, 0); }), {"1 channels"});
}

}  // namespace
}  // namespace tl::data
