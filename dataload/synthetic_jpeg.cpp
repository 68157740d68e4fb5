#include "dataload/synthetic_jpeg.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/check.h"
#include "common/files.h"
#include "dataload/image_folder.h"
#include "dataload/jpeg_codec.h"
#include "dataload/sample_rng.h"

namespace tl::data {
namespace {

// Keys of the generator's Philox streams, far from training epochs and from synthetic.cpp's.
constexpr uint64_t kSeedSalt = 0x4A50454753594E54ull;  // "JPEGSYNT"
constexpr int64_t kImageStream = 0x7A0000;

struct Rgb {
  int red, green, blue;
};

// Hue k / classes of the wheel at high saturation, in integers (256 steps per sixth).
Rgb classColour(int label, int classes) {
  const int hue = label * 6 * 256 / classes;
  const int sector = hue / 256, fraction = hue % 256;
  const int high = 230, low = 40;
  const int rising = low + (high - low) * fraction / 256;
  const int falling = high - (high - low) * fraction / 256;
  switch (sector) {
    case 0: return {high, rising, low};
    case 1: return {falling, high, low};
    case 2: return {low, high, rising};
    case 3: return {low, falling, high};
    case 4: return {rising, low, high};
    default: return {high, low, falling};
  }
}

// Whether offset (dx, dy) from the centre lies inside shape `shape` of radius r.
bool insideShape(int shape, int dx, int dy, int r) {
  const int ax = std::abs(dx), ay = std::abs(dy);
  switch (shape) {
    case 0: return dx * dx + dy * dy <= r * r;                     // disc
    case 1: return 5 * ax <= 4 * r && 5 * ay <= 4 * r;             // square
    case 2: return 2 * ay <= r && ax <= r;                         // horizontal band
    case 3: return 2 * ax <= r && ay <= r;                         // vertical band
    case 4: {                                                      // ring
      const int d2 = dx * dx + dy * dy;
      return d2 <= r * r && 100 * d2 >= 36 * r * r;
    }
    default: return ax <= r && ay <= r && (3 * ax <= r || 3 * ay <= r);  // cross
  }
}

int digits(int64_t value) {
  int count = 1;
  for (; value >= 10; value /= 10) ++count;
  return count;
}

std::string padded(const std::string& prefix, int64_t value, int width) {
  std::string number = std::to_string(value);
  return prefix + std::string(size_t(std::max(0, width - int(number.size()))), '0') + number;
}

int64_t imagesOf(const SyntheticJpegOptions& options, Split split) {
  return split == Split::Train ? options.trainImages : options.valImages;
}

// Writes `bytes` to `path` through a temporary name in the same folder.
void writeFileByRename(const std::string& path, const std::string& bytes) {
  const std::string temporary = path + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  TL_REQUIRE(file != nullptr, "cannot write '", temporary, "': ", std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  const int savedErrno = errno;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) {
    std::remove(temporary.c_str());
    inputError("cannot write '", temporary, "': ", std::strerror(written ? errno : savedErrno));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    std::remove(temporary.c_str());
    inputError("cannot rename '", temporary, "' to '", path, "': ", std::strerror(saved));
  }
}

}  // namespace

void validate(const SyntheticJpegOptions& o) {
  TL_REQUIRE(o.classes >= 2 && o.classes <= 1000, "--classes: 2 to 1000, got ", o.classes);
  TL_REQUIRE(o.minSide >= 8 && o.maxSide <= 4096 && o.minSide <= o.maxSide,
             "image sides must satisfy 8 <= --min-size <= --max-size <= 4096, got ", o.minSide,
             " and ", o.maxSide);
  TL_REQUIRE(o.quality >= 1 && o.quality <= 100, "--quality: 1 to 100, got ", o.quality);
  for (int64_t count : {o.trainImages, o.valImages}) {
    TL_REQUIRE(count >= o.classes && count <= kMaxSyntheticJpegsPerSplit,
               "each split needs at least one image per class (", o.classes, ") and at most ",
               kMaxSyntheticJpegsPerSplit, ", got ", count);
  }
}

SyntheticJpegImage renderSyntheticJpeg(const SyntheticJpegOptions& options, Split split,
                                       int64_t index) {
  TL_CHECK(index >= 0 && index < imagesOf(options, split), "image ", index);
  SampleRng rng(options.seed ^ kSeedSalt, kImageStream + (split == Split::Train ? 0 : 1), index);
  SyntheticJpegImage image;
  image.label = index % options.classes;
  image.width = int(rng.uniformInt(options.minSide, options.maxSide));
  image.height = int(rng.uniformInt(options.minSide, options.maxSide));
  const Rgb look = classColour(int(image.label), options.classes);
  const int base[3] = {look.red, look.green, look.blue};
  const int grey = int(rng.uniformInt(50, 130));
  int background[3], foreground[3];
  for (int c = 0; c < 3; ++c) {
    const int jitter = int(rng.uniformInt(-12, 12));
    background[c] = (3 * (grey + jitter) + base[c]) / 4;  // a quarter of the class colour
  }
  for (int c = 0; c < 3; ++c) foreground[c] = base[c] + int(rng.uniformInt(-20, 20));
  const int shorter = std::min(image.width, image.height);
  const int radius = int(rng.uniformInt(shorter * 3 / 10, shorter * 9 / 20));
  const int centreX = image.width / 2 + int(rng.uniformInt(-shorter / 10, shorter / 10));
  const int centreY = image.height / 2 + int(rng.uniformInt(-shorter / 10, shorter / 10));
  const int shape = int(image.label % 6);
  image.rgb.resize(size_t(image.height) * size_t(image.width) * 3);
  uint8_t* pixel = image.rgb.data();
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x, pixel += 3) {
      const int* colour = insideShape(shape, x - centreX, y - centreY, radius) ? foreground
                                                                               : background;
      uint32_t noiseBits = rng.nextU32();
      for (int c = 0; c < 3; ++c, noiseBits >>= 8) {
        const int noise = int((noiseBits & 0xFF) * 25 >> 8) - 12;  // -12..12
        pixel[c] = uint8_t(std::clamp(colour[c] + noise, 0, 255));
      }
    }
  }
  return image;
}

std::string syntheticJpegPath(const SyntheticJpegOptions& options, Split split, int64_t index) {
  const int64_t count = imagesOf(options, split);
  return str(imageFolderSplitName(split), "/",
             padded("class_", index % options.classes, std::max(2, digits(options.classes - 1))),
             "/", padded("img_", index, std::max(5, digits(count - 1))), ".jpg");
}

void writeSyntheticImageFolder(const SyntheticJpegOptions& options, const std::string& dir) {
  validate(options);
  ensureWritableDir(dir);
  for (Split split : {Split::Train, Split::Test}) {
    const std::string splitDir = joinPath(dir, imageFolderSplitName(split));
    std::error_code error;
    TL_REQUIRE(!std::filesystem::exists(splitDir, error) ||
                   std::filesystem::is_empty(splitDir, error),
               "'", splitDir, "' already holds files; jpeg-synth writes into a fresh folder");
    for (int k = 0; k < options.classes; ++k) {
      const std::string classPath = joinPath(dir, syntheticJpegPath(options, split, k));
      const std::string classDir = classPath.substr(0, classPath.rfind('/'));
      std::filesystem::create_directories(classDir, error);
      TL_REQUIRE(!error, "cannot create '", classDir, "': ", error.message());
    }
    for (int64_t i = 0; i < imagesOf(options, split); ++i) {
      const SyntheticJpegImage image = renderSyntheticJpeg(options, split, i);
      writeFileByRename(joinPath(dir, syntheticJpegPath(options, split, i)),
                        encodeJpeg(image.rgb.data(), image.width, image.height, 3,
                                   options.quality));
    }
  }
}

}  // namespace tl::data
