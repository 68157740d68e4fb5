// Image folders: class indices as torchvision's ImageFolder gives them, clear errors for bad
// layouts and bad files, deterministic replacement of corrupt files, and the same batch bytes
// whatever the number of loader threads.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/files.h"
#include "dataload/image_folder.h"
#include "dataload/jpeg_codec.h"
#include "dataload/loader.h"
#include "dataload/resized_crop.h"
#include "dataload/synthetic_jpeg.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::freshDir;
using testing::inputErrorOf;

void writeBytes(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// A small JPEG of one flat grey level, so a decoded file tells which one it was.
void writeFlatJpeg(const std::string& path, int level, int height = 8, int width = 8) {
  std::vector<uint8_t> pixels(size_t(height) * width * 3, uint8_t(level));
  writeBytes(path, encodeJpeg(pixels.data(), width, height, 3, 95));
}

int decodedLevel(const Dataset& dataset, int64_t index) {
  std::vector<uint8_t> scratch;
  const ImageView view = dataset.image(index, scratch);
  return view.pixels[0];
}

TEST(ImageFolder, ClassesAreSortedFolderNamesAndFilesSortedWithin) {
  const std::string dir = freshDir("data");
  // Created out of order; "c10" sorts before "c2" (byte order, as Python's sorted()).
  writeFlatJpeg(dir + "/train/c2/b.JPEG", 10);
  writeFlatJpeg(dir + "/train/c2/a.jpg", 20);
  writeFlatJpeg(dir + "/train/c10/z.jpeg", 30);
  writeFlatJpeg(dir + "/train/Apple/x.Jpg", 40);
  writeBytes(dir + "/train/c2/notes.txt", "ignored");
  writeBytes(dir + "/train/c2/nested/deeper.jpg", "ignored: subfolders of a class are not read");
  ImageFolderDataset train(dir, Split::Train, DatasetOptions{});
  EXPECT_EQ(train.classNames(), (std::vector<std::string>{"Apple", "c10", "c2"}));
  ASSERT_EQ(train.size(), 4);
  EXPECT_EQ(train.numClasses(), 3);
  const std::vector<int64_t> labels = {train.label(0), train.label(1), train.label(2),
                                       train.label(3)};
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 1, 2, 2}));
  EXPECT_EQ(train.path(2), dir + "/train/c2/a.jpg");
  EXPECT_EQ(train.path(3), dir + "/train/c2/b.JPEG");
  EXPECT_NEAR(decodedLevel(train, 0), 40, 2);
  EXPECT_NEAR(decodedLevel(train, 2), 20, 2);
  EXPECT_NEAR(decodedLevel(train, 3), 10, 2);
  EXPECT_EQ(train.imageShape(), (ImageShape{3, 0, 0}));
  expectContains(train.describe(), {dir + "/train", "4 JPEG images", "3 classes"});
}

TEST(ImageFolder, OpensThroughTheDatasetKind) {
  const std::string dir = freshDir("data");
  writeFlatJpeg(dir + "/train/a/1.jpg", 1);
  writeFlatJpeg(dir + "/val/a/2.jpg", 2);
  const std::vector<std::string> kinds = datasetKinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "imagefolder"), kinds.end());
  EXPECT_EQ(openDataset("imagefolder", dir, Split::Test)->size(), 1);
}

TEST(ImageFolder, LayoutErrorsNameTheFolder) {
  const std::string dir = freshDir("data");
  expectContains(inputErrorOf([&] { ImageFolderDataset(dir, Split::Train, {}); }),
                 {"image folder '" + dir + "/train' is missing"});
  std::filesystem::create_directories(dir + "/train");
  expectContains(inputErrorOf([&] { ImageFolderDataset(dir, Split::Train, {}); }),
                 {"image folder '" + dir + "/train' has no class folders"});
  std::filesystem::create_directories(dir + "/train/empty");
  writeBytes(dir + "/train/empty/readme.txt", "no images here");
  writeFlatJpeg(dir + "/train/full/1.jpg", 1);
  expectContains(inputErrorOf([&] { ImageFolderDataset(dir, Split::Train, {}); }),
                 {"class folder '" + dir + "/train/empty' holds no .jpg or .jpeg images"});
  writeFlatJpeg(dir + "/train/empty/1.jpg", 1);
  writeFlatJpeg(dir + "/val/full/1.jpg", 1);
  writeFlatJpeg(dir + "/val/other/1.jpg", 1);
  expectContains(inputErrorOf([&] { ImageFolderDataset(dir, Split::Test, {}); }),
                 {"class folders of '" + dir + "/val' (2) differ from those of '" + dir +
                      "/train' (2)",
                  "only in val: other", "only in train: empty"});
}

TEST(ImageFolder, CorruptFilesAreInputErrorsNamingTheFile) {
  const std::string dir = freshDir("data");
  writeFlatJpeg(dir + "/train/a/0.jpg", 1);
  writeBytes(dir + "/train/a/1.jpg", "");
  writeBytes(dir + "/train/a/2.jpg", "GIF89a, not a JPEG");
  ImageFolderDataset train(dir, Split::Train, {});
  std::vector<uint8_t> scratch;
  expectContains(inputErrorOf([&] { train.image(1, scratch); }),
                 {"image '" + dir + "/train/a/1.jpg' is not a valid JPEG: the file is empty"});
  expectContains(inputErrorOf([&] { train.image(2, scratch); }),
                 {"image '" + dir + "/train/a/2.jpg' is not a valid JPEG: Not a JPEG file"});
  EXPECT_EQ(train.corruptFilesSkipped(), 0);
  // Through the whole pipeline the message is the same.
  SamplePipeline pipeline(std::make_shared<ImageFolderDataset>(dir, Split::Train, DatasetOptions{}),
                          makeResizedCrop(ResizedCropOptions{}), 0);
  std::vector<float> out(size_t(pipeline.outputShape().numel()));
  expectContains(inputErrorOf([&] { pipeline.load(0, 2, out.data(), scratch); }),
                 {"image '" + dir + "/train/a/2.jpg' is not a valid JPEG"});
}

// A folder named like an image (`3.jpg/`) is refused naming it: skipping it would silently
// train on less data, reading it would fail at a random step.
TEST(ImageFolder, FolderNamedLikeAnImageIsNamed) {
  const std::string dir = freshDir("data");
  writeFlatJpeg(dir + "/train/a/0.jpg", 1);
  std::filesystem::create_directories(dir + "/train/a/3.jpg");
  expectContains(inputErrorOf([&] { ImageFolderDataset(dir, Split::Train, {}); }),
                 {"image '" + dir + "/train/a/3.jpg' is not a regular file (a folder)"});
}

TEST(ImageFolder, SkipCorruptReplacesWithTheNextGoodFileOfTheClass) {
  const std::string dir = freshDir("data");
  writeFlatJpeg(dir + "/train/a/0.jpg", 10);
  writeBytes(dir + "/train/a/1.jpg", "truncated");
  writeBytes(dir + "/train/a/2.jpg", "");
  writeFlatJpeg(dir + "/train/a/3.jpg", 40);
  writeBytes(dir + "/train/a/4.jpg", "bad at the end: wraps to the class's first file");
  writeFlatJpeg(dir + "/train/b/0.jpg", 90);
  writeBytes(dir + "/train/c/0.jpg", "every file of this class is bad");
  const std::vector<int> expected = {10, 40, 40, 40, 10, 90};
  // Threads visit the samples in different orders; the replacements never change.
  for (int threads : {1, 3}) {
    DatasetOptions options;
    options.skipCorrupt = true;
    ImageFolderDataset train(dir, Split::Train, options);
    std::vector<std::thread> pool;
    std::vector<std::vector<int>> seen(size_t(threads), std::vector<int>(6));
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (int k = 0; k < 6; ++k) {
          const int index = (k + 2 * t) % 6;
          seen[size_t(t)][size_t(index)] = decodedLevel(train, index);
        }
      });
    }
    for (auto& thread : pool) thread.join();
    for (int t = 0; t < threads; ++t) {
      for (int i = 0; i < 6; ++i) EXPECT_NEAR(seen[size_t(t)][size_t(i)], expected[size_t(i)], 2);
    }
    EXPECT_EQ(train.corruptFilesSkipped(), 3) << "each corrupt file counts once";
    EXPECT_EQ(train.corruptSamplesSkipped(), (std::vector<int64_t>{1, 2, 4}));
    EXPECT_EQ(train.label(1), 0) << "a replacement keeps its sample's class";
    std::vector<uint8_t> scratch;
    expectContains(inputErrorOf([&] { train.image(6, scratch); }),
                   {"every image of class 'c'", "is corrupt"});
  }
}

TEST(ImageFolder, ReducedDecodesGiveNearlyTheFullDecodesCrops) {
  // Smooth 384x512 pictures cropped to >= 90% of their area and resized to 32: every box is
  // over 8 x 32 px, so libjpeg decodes them at 1/8 of each side.
  const std::string dir = freshDir("data");
  for (int k = 0; k < 3; ++k) {
    std::vector<uint8_t> pixels(size_t(384) * 512 * 3);
    for (int y = 0; y < 384; ++y) {
      for (int x = 0; x < 512; ++x) {
        for (int c = 0; c < 3; ++c) {
          pixels[(size_t(y) * 512 + x) * 3 + c] = uint8_t((x / 3 + y / 2 + 60 * c + 40 * k) % 256);
        }
      }
    }
    writeBytes(dir + "/train/k" + std::to_string(k) + "/0.jpg",
               encodeJpeg(pixels.data(), 512, 384, 3, 95));
  }
  auto dataset = std::make_shared<ImageFolderDataset>(dir, Split::Train, DatasetOptions{});
  ResizedCropOptions crop;
  crop.size = 32;
  crop.minScale = 0.9;
  SamplePipeline reduced(dataset, makeResizedCrop(crop), 4);
  crop.reducedDecode = false;
  SamplePipeline full(dataset, makeResizedCrop(crop), 4);
  std::vector<float> a(size_t(3 * 32 * 32)), b(a.size()), again(a.size());
  std::vector<uint8_t> scratch;
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    for (int64_t i = 0; i < 3; ++i) {
      reduced.load(epoch, i, a.data(), scratch);
      full.load(epoch, i, b.data(), scratch);
      reduced.load(epoch, i, again.data(), scratch);
      EXPECT_EQ(a, again) << "reduced decodes are deterministic";
      EXPECT_NE(a, b) << "the reduced decode was used";
      double difference = 0;
      for (size_t j = 0; j < a.size(); ++j) difference += std::abs(a[j] - b[j]);
      // In normalized units: 0.05 is about 3 grey levels.
      EXPECT_LT(difference / double(a.size()), 0.05) << "epoch " << epoch << " sample " << i;
    }
  }
}

// All batches of one epoch of an image folder through RandomResizedCrop (with reduced
// decodes: sources up to 96 px, output 16).
std::vector<std::vector<float>> epochBatches(std::shared_ptr<const SamplePipeline> pipeline,
                                             int workers) {
  auto stream = std::make_shared<BatchStream>(
      DistributedSampler(SamplerOptions{pipeline->dataset().size(), 2, 1, 3, true, false}), 5,
      false);
  auto served = std::make_shared<int>(0);
  const int64_t batches = stream->batchesPerEpoch() * 2;  // two epochs, two sets of draws
  Loader loader(pipeline,
                [stream, served, batches]() -> std::optional<BatchRequest> {
                  if (*served == batches) return std::nullopt;
                  ++*served;
                  return stream->next();
                },
                LoaderOptions{workers, 2, 2});
  std::vector<std::vector<float>> out;
  while (auto batch = loader.next()) {
    const float* data = batch->images.data_ptr<float>();
    out.emplace_back(data, data + batch->images.numel());
  }
  return out;
}

TEST(ImageFolder, SameBatchBytesForAnyNumberOfLoaderThreads) {
  const std::string dir = freshDir("data");
  SyntheticJpegOptions synth;
  synth.classes = 3;
  synth.trainImages = 40;
  synth.valImages = 3;
  writeSyntheticImageFolder(synth, dir);
  ResizedCropOptions crop;
  crop.size = 16;
  auto dataset = std::make_shared<ImageFolderDataset>(dir, Split::Train, DatasetOptions{});
  std::shared_ptr<const Transform> transform = makeResizedCrop(crop);
  auto pipeline = std::make_shared<const SamplePipeline>(dataset, transform, 11);
  EXPECT_EQ(pipeline->outputShape(), (ImageShape{3, 16, 16}));
  // Many crops are large enough to be decoded at half size or less, so the test covers those.
  int reduced = 0;
  std::vector<uint8_t> scratch;
  for (int64_t i = 0; i < dataset->size(); ++i) {
    auto pick = [&](const ImageShape& stored) {
      return transform->decodeReduction(stored, SampleRng(11, 0, i));
    };
    reduced += dataset->imageAtReduction(i, scratch, pick).reduction > 1;
  }
  EXPECT_GT(reduced, 5);
  const std::vector<std::vector<float>> reference = epochBatches(pipeline, 0);
  ASSERT_EQ(reference.size(), 8u);  // 20 samples per shard in batches of 5, two epochs
  for (int workers : {1, 2, 4}) {
    const std::vector<std::vector<float>> got = epochBatches(pipeline, workers);
    ASSERT_EQ(got.size(), reference.size());
    for (size_t b = 0; b < got.size(); ++b) {
      ASSERT_EQ(got[b].size(), reference[b].size());
      EXPECT_EQ(std::memcmp(got[b].data(), reference[b].data(), got[b].size() * sizeof(float)), 0)
          << workers << " workers, batch " << b;
    }
  }
}

}  // namespace
}  // namespace tl::data
