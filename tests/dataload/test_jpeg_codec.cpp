// JPEG codec: generated files decode to their rendered size and colours, greyscale and CMYK
// come out as RGB, reduced decodes have libjpeg's sizes, and every kind of bad file is an
// InputError naming it rather than a crash or a silently grey image.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "common/files.h"
#include "dataload/jpeg_codec.h"
#include "dataload/sample_rng.h"
#include "dataload/synthetic_jpeg.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::freshDir;

std::vector<uint8_t> bytesOf(const std::string& text) { return {text.begin(), text.end()}; }

// Decodes `bytes` and returns the message of the CorruptImageError it must throw.
std::string corruptMessage(const std::vector<uint8_t>& bytes, const std::string& name) {
  std::vector<uint8_t> rgb;
  try {
    decodeJpeg(bytes.data(), bytes.size(), name, rgb);
  } catch (const CorruptImageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no CorruptImageError for " << name;
  return "";
}

// A smooth 3-channel test picture (JPEG keeps smooth content nearly exactly).
std::vector<uint8_t> gradient(int height, int width, int channels) {
  std::vector<uint8_t> pixels(size_t(height) * width * channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        pixels[(size_t(y) * width + x) * channels + c] =
            uint8_t((40 + 150 * x / width + 50 * y / height + 20 * c) % 256);
      }
    }
  }
  return pixels;
}

double meanAbsDifference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  EXPECT_EQ(a.size(), b.size());
  double sum = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) sum += std::abs(int(a[i]) - int(b[i]));
  return sum / double(a.size());
}

TEST(JpegCodec, GeneratedFilesDecodeToTheirSizeAndColours) {
  const std::string dir = freshDir("folder");
  SyntheticJpegOptions options;
  options.classes = 3;
  options.trainImages = 6;
  options.valImages = 3;
  options.minSide = 40;
  options.maxSide = 80;
  options.seed = 5;
  writeSyntheticImageFolder(options, dir);
  std::vector<uint8_t> rgb;
  for (int64_t i = 0; i < options.trainImages; ++i) {
    const SyntheticJpegImage rendered = renderSyntheticJpeg(options, Split::Train, i);
    EXPECT_GE(rendered.width, 40);
    EXPECT_LE(rendered.height, 80);
    const std::string path = joinPath(dir, syntheticJpegPath(options, Split::Train, i));
    const std::string file = readFile(path);
    const JpegDecodeResult result =
        decodeJpeg(reinterpret_cast<const uint8_t*>(file.data()), file.size(), path, rgb);
    EXPECT_EQ(result.shape, (ImageShape{3, rendered.height, rendered.width}));
    EXPECT_EQ(result.storedShape, result.shape);
    EXPECT_EQ(result.reduction, 1);
    // Per-pixel noise does not survive quality 90, the colours do: the channel means agree.
    for (int c = 0; c < 3; ++c) {
      double decodedSum = 0, renderedSum = 0;
      for (size_t p = size_t(c); p < rgb.size(); p += 3) {
        decodedSum += rgb[p];
        renderedSum += rendered.rgb[p];
      }
      EXPECT_NEAR(decodedSum / (rgb.size() / 3), renderedSum / (rgb.size() / 3), 2.0)
          << "image " << i << " channel " << c;
    }
    EXPECT_LT(meanAbsDifference(rgb, rendered.rgb), 8.0) << "image " << i;
  }
  // Sorted names are numeric order; image i is in class i % classes.
  EXPECT_EQ(syntheticJpegPath(options, Split::Test, 2), "val/class_02/img_00002.jpg");
  EXPECT_EQ(syntheticJpegPath(options, Split::Train, 4), "train/class_01/img_00004.jpg");
}

TEST(JpegCodec, GreyscaleBecomesRgb) {
  const std::vector<uint8_t> grey = gradient(24, 40, 1);
  const std::string jpeg = encodeJpeg(grey.data(), 40, 24, 1, 95);
  std::vector<uint8_t> rgb;
  const JpegDecodeResult result = decodeJpeg(reinterpret_cast<const uint8_t*>(jpeg.data()),
                                             jpeg.size(), "grey.jpg", rgb);
  ASSERT_EQ(result.shape, (ImageShape{3, 24, 40}));
  ASSERT_EQ(rgb.size(), size_t(24 * 40 * 3));
  double error = 0;
  for (size_t p = 0; p < grey.size(); ++p) {
    EXPECT_EQ(rgb[3 * p], rgb[3 * p + 1]);
    EXPECT_EQ(rgb[3 * p], rgb[3 * p + 2]);
    error += std::abs(int(rgb[3 * p]) - int(grey[p]));
  }
  EXPECT_LT(error / grey.size(), 2.0);
}

TEST(JpegCodec, AdobeCmykBecomesRgbAsPilConvertsIt) {
  // Adobe CMYK stores 255 - ink. Left half pure red (C 0, M 255, Y 255, K 0), right half a
  // 50% grey from black ink alone (K 128).
  const int height = 16, width = 32;
  std::vector<uint8_t> cmyk(size_t(height) * width * 4);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &cmyk[(size_t(y) * width + x) * 4];
      const bool red = x < width / 2;
      const int ink[4] = {0, red ? 255 : 0, red ? 255 : 0, red ? 0 : 128};
      for (int c = 0; c < 4; ++c) p[c] = uint8_t(255 - ink[c]);
    }
  }
  const std::string jpeg = encodeJpeg(cmyk.data(), width, height, 4, 100);
  std::vector<uint8_t> rgb;
  decodeJpeg(reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size(), "cmyk.jpg", rgb);
  auto at = [&](int y, int x, int c) { return int(rgb[(size_t(y) * width + x) * 3 + c]); };
  EXPECT_NEAR(at(8, 4, 0), 255, 4);
  EXPECT_NEAR(at(8, 4, 1), 0, 4);
  EXPECT_NEAR(at(8, 4, 2), 0, 4);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(at(8, 28, c), 127, 4);
}

TEST(JpegCodec, ReducedDecodeHasLibjpegSizesAndSimilarPixels) {
  const std::vector<uint8_t> picture = gradient(100, 130, 3);
  const std::string jpeg = encodeJpeg(picture.data(), 130, 100, 3, 95);
  std::vector<uint8_t> full, half;
  ImageShape seen;
  const auto* data = reinterpret_cast<const uint8_t*>(jpeg.data());
  decodeJpeg(data, jpeg.size(), "p.jpg", full);
  const JpegDecodeResult result = decodeJpeg(data, jpeg.size(), "p.jpg", half,
                                             [&](const ImageShape& stored) {
                                               seen = stored;
                                               return 4;
                                             });
  EXPECT_EQ(seen, (ImageShape{3, 100, 130}));
  EXPECT_EQ(result.reduction, 4);
  EXPECT_EQ(result.storedShape, (ImageShape{3, 100, 130}));
  EXPECT_EQ(result.shape, (ImageShape{3, 25, 33}));  // each side rounded up
  ASSERT_EQ(half.size(), size_t(25 * 33 * 3));
  // Reduced pixel (y, x) averages the 4x4 block at (4y, 4x): close to its centre's value.
  for (int y = 2; y < 23; y += 5) {
    for (int x = 2; x < 31; x += 7) {
      for (int c = 0; c < 3; ++c) {
        const int centre = (full[(size_t(4 * y + 1) * 130 + 4 * x + 1) * 3 + c] +
                            full[(size_t(4 * y + 2) * 130 + 4 * x + 2) * 3 + c]) / 2;
        EXPECT_NEAR(half[(size_t(y) * 33 + x) * 3 + c], centre, 6) << y << "," << x;
      }
    }
  }
}

TEST(JpegCodec, BadFilesAreInputErrorsNamingTheFile) {
  const std::vector<uint8_t> picture = gradient(64, 64, 3);
  const std::string jpeg = encodeJpeg(picture.data(), 64, 64, 3, 90);
  const std::vector<uint8_t> valid = bytesOf(jpeg);

  std::vector<uint8_t> truncated(valid.begin(), valid.begin() + long(valid.size() / 2));
  expectContains(corruptMessage(truncated, "/d/train/a/half.jpg"),
                 {"image '/d/train/a/half.jpg' is not a valid JPEG: ", "Premature end"});
  // Only the last bytes of the scan missing: libjpeg would pad with grey and succeed.
  std::vector<uint8_t> nearlyAll(valid.begin(), valid.end() - 40);
  expectContains(corruptMessage(nearlyAll, "tail.jpg"), {"image 'tail.jpg' is not a valid JPEG"});

  std::vector<uint8_t> random(2000);
  SampleRng rng(1, 2, 3);
  for (uint8_t& byte : random) byte = uint8_t(rng.nextU32());
  random[0] = 0x42;  // not 0xFF, whatever the draw
  expectContains(corruptMessage(random, "noise.jpg"),
                 {"image 'noise.jpg' is not a valid JPEG: ", "Not a JPEG file"});
  expectContains(corruptMessage({}, "empty.jpg"),
                 {"image 'empty.jpg' is not a valid JPEG: the file is empty"});
  expectContains(corruptMessage(bytesOf("\x89PNG\r\n\x1a\n rest of a png"), "png.jpg"),
                 {"image 'png.jpg' is not a valid JPEG"});
  // A JPEG header with nothing after the start-of-image marker.
  expectContains(corruptMessage({0xFF, 0xD8}, "soi.jpg"), {"image 'soi.jpg' is not a valid JPEG"});

  // The codec stays usable after every failure.
  std::vector<uint8_t> rgb;
  EXPECT_EQ(decodeJpeg(valid.data(), valid.size(), "ok.jpg", rgb).shape, (ImageShape{3, 64, 64}));
}

TEST(JpegCodec, CorruptImageErrorIsAnInputError) {
  // Tools print InputErrors as one message and exit 2; a corrupt image must be one of them.
  std::vector<uint8_t> rgb;
  const std::vector<uint8_t> bytes = bytesOf("not a jpeg at all");
  expectContains(testing::inputErrorOf([&] {
                   decodeJpeg(bytes.data(), bytes.size(), "x.jpg", rgb);
                 }),
                 {"'x.jpg'"});
}

}  // namespace
}  // namespace tl::data
