#include "dataload/synthetic.h"

#include <algorithm>
#include <cstdlib>

#include "common/check.h"
#include "common/files.h"
#include "dataload/cifar10.h"
#include "dataload/sample_rng.h"

namespace tl::data {
namespace {

struct ClassLook {
  const char* name;
  int red, green, blue;
};

constexpr ClassLook kLooks[kCifarClasses] = {
    {"red-disc", 220, 40, 40},         {"green-square", 40, 200, 60},
    {"blue-hbar", 50, 80, 230},        {"yellow-vbar", 230, 210, 40},
    {"magenta-ring", 210, 50, 200},    {"cyan-cross", 40, 200, 210},
    {"orange-triangle", 240, 140, 30}, {"purple-diagonal", 130, 60, 200},
    {"white-checker", 235, 235, 235},  {"brown-x", 120, 90, 50},
};

// Keys of the generator's Philox streams: far from any training epoch, and the seed is mixed
// with a constant, so a run that reuses the data seed for augmentation gets unrelated draws.
constexpr uint64_t kSeedSalt = 0x53594E5448455449ull;  // "SYNTHETI"
constexpr int64_t kImageStream = 0x5E0000;
constexpr int64_t kLabelStream = 0x5E1000;

// Whether pixel offset (dx, dy) from the shape's centre lies inside shape `shape` of radius r.
bool insideShape(int shape, int dx, int dy, int r) {
  const int ax = std::abs(dx), ay = std::abs(dy);
  const bool inBox = ax <= r && ay <= r;
  switch (shape) {
    case 0: return dx * dx + dy * dy <= r * r;                                   // disc
    case 1: return 5 * ax <= 4 * r && 5 * ay <= 4 * r;                           // square
    case 2: return 3 * ay <= r && 5 * ax <= 6 * r;                               // horizontal bar
    case 3: return 3 * ax <= r && 5 * ay <= 6 * r;                               // vertical bar
    case 4: {                                                                    // ring
      const int d2 = dx * dx + dy * dy;
      return d2 <= r * r && 100 * d2 >= 30 * r * r;
    }
    case 5: return inBox && (10 * ax <= 3 * r || 10 * ay <= 3 * r);              // cross
    case 6: return dy >= -r && dy <= r && 2 * ax <= dy + r;                      // triangle
    case 7: return inBox && 5 * std::abs(dx - dy) <= 2 * r;                      // diagonal
    case 8: return inBox && ((((dx + r) * 4 / (r + 1)) + ((dy + r) * 4 / (r + 1))) % 2 == 0);
    default: return inBox && (10 * std::abs(dx - dy) <= 3 * r || 10 * std::abs(dx + dy) <= 3 * r);
  }
}

uint8_t clampByte(int value) { return uint8_t(std::clamp(value, 0, 255)); }

void validate(const SyntheticOptions& options) {
  TL_REQUIRE(options.classes >= 2 && options.classes <= kCifarClasses,
             "synthetic data needs 2 to 10 classes (CIFAR-10 labels are 0..9), got ",
             options.classes);
  for (int64_t count : {options.trainImages, options.testImages}) {
    TL_REQUIRE(count >= 0 && count <= kMaxSyntheticImagesPerSplit, "synthetic split of ", count,
               " images: it must hold 0 to ", kMaxSyntheticImagesPerSplit);
  }
}

// Image i of a split, rendered on demand.
class SyntheticSplit {
 public:
  SyntheticSplit(const SyntheticOptions& options, Split split)
      : seed_(options.seed ^ kSeedSalt), splitId_(split == Split::Train ? 0 : 1) {
    const int64_t count = split == Split::Train ? options.trainImages : options.testImages;
    labels_.resize(size_t(count));
    for (int64_t i = 0; i < count; ++i) labels_[size_t(i)] = i % options.classes;
    SampleRng rng(seed_, kLabelStream + splitId_, 0);
    for (int64_t i = count - 1; i > 0; --i) {  // Fisher-Yates
      std::swap(labels_[size_t(i)], labels_[size_t(rng.uniformInt(0, i))]);
    }
  }

  const std::vector<int64_t>& labels() const { return labels_; }

  void render(int64_t index, uint8_t* hwc) const {
    SampleRng rng(seed_, kImageStream + splitId_, index);
    const int label = int(labels_[size_t(index)]);
    const ClassLook& look = kLooks[label];
    const int gray = int(rng.uniformInt(30, 110));
    int background[3], foreground[3];
    const int base[3] = {look.red, look.green, look.blue};
    for (int c = 0; c < 3; ++c) background[c] = gray + int(rng.uniformInt(-15, 15));
    for (int c = 0; c < 3; ++c) foreground[c] = base[c] + int(rng.uniformInt(-25, 25));
    const int radius = int(rng.uniformInt(7, 11));
    const int centreX = kCifarSide / 2 + int(rng.uniformInt(-4, 4));
    const int centreY = kCifarSide / 2 + int(rng.uniformInt(-4, 4));
    uint32_t noiseBits = 0;
    int noiseLeft = 0;
    for (int y = 0; y < kCifarSide; ++y) {
      for (int x = 0; x < kCifarSide; ++x) {
        const bool inside = insideShape(label, x - centreX, y - centreY, radius);
        const int* colour = inside ? foreground : background;
        for (int c = 0; c < 3; ++c) {
          if (noiseLeft == 0) {
            noiseBits = rng.nextU32();
            noiseLeft = 4;
          }
          const int noise = int((noiseBits & 0xFF) * 49 >> 8) - 24;  // -24..24
          noiseBits >>= 8;
          --noiseLeft;
          hwc[(y * kCifarSide + x) * 3 + c] = clampByte(colour[c] + noise);
        }
      }
    }
  }

 private:
  uint64_t seed_;
  int splitId_;
  std::vector<int64_t> labels_;
};

}  // namespace

std::vector<std::string> syntheticClassNames(int classes) {
  TL_CHECK(classes >= 1 && classes <= kCifarClasses, "classes ", classes);
  std::vector<std::string> names;
  for (int k = 0; k < classes; ++k) names.emplace_back(kLooks[k].name);
  return names;
}

std::unique_ptr<InMemoryDataset> makeSyntheticCifar(const SyntheticOptions& options,
                                                    Split split) {
  validate(options);
  SyntheticSplit images(options, split);
  const int64_t count = int64_t(images.labels().size());
  std::vector<uint8_t> pixels(size_t(count * kCifarImageBytes));
  for (int64_t i = 0; i < count; ++i) images.render(i, pixels.data() + i * kCifarImageBytes);
  std::string description = str("synthetic CIFAR-10-shaped ", split == Split::Train ? "train" : "test",
                                ", ", count, " images, ", options.classes, " classes, seed ",
                                options.seed);
  return std::make_unique<InMemoryDataset>(std::move(description),
                                           ImageShape{kCifarChannels, kCifarSide, kCifarSide},
                                           options.classes, std::move(pixels), images.labels());
}

void writeSyntheticCifar10(const SyntheticOptions& options, const std::string& dir) {
  validate(options);
  TL_REQUIRE(options.trainImages >= 1 && options.testImages >= 1,
             "synthetic CIFAR-10 files need at least one training and one test image, got ",
             options.trainImages, " and ", options.testImages);
  ensureWritableDir(dir);

  // Renders images [begin, end) of a split and writes them as one batch file.
  auto writeBatchFile = [&](const SyntheticSplit& images, int64_t begin, int64_t end,
                            const std::string& name) {
    std::vector<uint8_t> pixels(size_t((end - begin) * kCifarImageBytes));
    for (int64_t i = begin; i < end; ++i) {
      images.render(i, pixels.data() + (i - begin) * kCifarImageBytes);
    }
    writeFileAtomic(joinPath(dir, name),
                    encodeCifar10Records(pixels.data(), images.labels().data() + begin, end - begin));
  };

  const SyntheticSplit train(options, Split::Train);
  const std::vector<std::string> trainFiles = cifar10FileNames(Split::Train);
  const int64_t files = int64_t(trainFiles.size());
  int64_t begin = 0;
  for (int64_t f = 0; f < files; ++f) {
    const int64_t count = options.trainImages / files + (f < options.trainImages % files ? 1 : 0);
    writeBatchFile(train, begin, begin + count, trainFiles[size_t(f)]);
    begin += count;
  }
  TL_CHECK_EQ(begin, options.trainImages);

  const SyntheticSplit test(options, Split::Test);
  writeBatchFile(test, 0, options.testImages, cifar10FileNames(Split::Test).front());

  std::string meta;
  for (const std::string& name : syntheticClassNames(options.classes)) meta += name + "\n";
  writeFileAtomic(joinPath(dir, "batches.meta.txt"), meta);
}

}  // namespace tl::data
