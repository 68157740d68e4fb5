// CIFAR-10 and IDX readers: decoding, and one clear InputError per kind of bad file.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <fstream>

#include "common/files.h"
#include "dataload/cifar10.h"
#include "dataload/dataset.h"
#include "dataload/idx.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::freshDir;
using testing::inputErrorOf;

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

void writeGzip(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

// A CIFAR record whose pixel (y, x) of channel c is (label * 7 + c * 50 + y * 3 + x) % 256,
// laid out as the format says: label byte, then the R, G and B planes.
std::string cifarRecord(uint8_t label) {
  std::string record(1 + 3072, '\0');
  record[0] = char(label);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) record[1 + c * 1024 + y * 32 + x] = char((label * 7 + c * 50 + y * 3 + x) % 256);
  return record;
}

// Writes a CIFAR-10 folder with records {labels of file 1}, ..., test_batch.bin.
void writeCifarDir(const std::string& dir, const std::vector<std::vector<uint8_t>>& trainFiles,
                   const std::vector<uint8_t>& testLabels) {
  for (size_t f = 0; f < trainFiles.size(); ++f) {
    std::string bytes;
    for (uint8_t label : trainFiles[f]) bytes += cifarRecord(label);
    writeBytes(joinPath(dir, "data_batch_" + std::to_string(f + 1) + ".bin"), bytes);
  }
  std::string bytes;
  for (uint8_t label : testLabels) bytes += cifarRecord(label);
  writeBytes(joinPath(dir, "test_batch.bin"), bytes);
}

TEST(Cifar10Reader, DecodesPlanesToHwcAcrossAllBatchFiles) {
  const std::string dir = freshDir("cifar");
  writeCifarDir(dir, {{3, 9}, {0}, {8}, {7}, {1, 2, 4}}, {5, 6});
  auto train = openDataset("cifar10", dir, Split::Train);
  auto test = openDataset("cifar10", dir, Split::Test);
  ASSERT_EQ(train->size(), 8);
  ASSERT_EQ(test->size(), 2);
  EXPECT_EQ(train->numClasses(), 10);
  EXPECT_EQ(train->imageShape(), (ImageShape{3, 32, 32}));
  const std::vector<int64_t> expectedLabels = {3, 9, 0, 8, 7, 1, 2, 4};
  std::vector<uint8_t> scratch;
  for (int64_t i = 0; i < train->size(); ++i) {
    ASSERT_EQ(train->label(i), expectedLabels[size_t(i)]);
    ImageView image = train->image(i, scratch);
    ASSERT_EQ(image.shape, (ImageShape{3, 32, 32}));
    const int label = int(expectedLabels[size_t(i)]);
    for (int y : {0, 5, 31})
      for (int x : {0, 17, 31})
        for (int c = 0; c < 3; ++c)
          ASSERT_EQ(image.pixels[(y * 32 + x) * 3 + c], (label * 7 + c * 50 + y * 3 + x) % 256)
              << "image " << i << " y " << y << " x " << x << " c " << c;
  }
  EXPECT_EQ(test->label(1), 6);
  expectContains(train->describe(), {"CIFAR-10 train", "8 images", dir});
}

TEST(Cifar10Reader, TruncatedFileIsNamedWithItsSize) {
  const std::string dir = freshDir("cifar");
  writeCifarDir(dir, {{1}, {2}, {3}, {4}, {5}}, {6});
  writeBytes(joinPath(dir, "data_batch_3.bin"), cifarRecord(3) + cifarRecord(4).substr(0, 100));
  std::string message = inputErrorOf([&] { openDataset("cifar10", dir, Split::Train); });
  expectContains(message, {"CIFAR-10 file '" + joinPath(dir, "data_batch_3.bin") + "' is truncated",
                           "3173 bytes", "3073-byte record"});
}

TEST(Cifar10Reader, LabelOutOfRangeIsCorrupt) {
  const std::string dir = freshDir("cifar");
  writeCifarDir(dir, {{1}, {2}, {3}, {4}, {5}}, {6, 6, 10});
  std::string message = inputErrorOf([&] { openDataset("cifar10", dir, Split::Test); });
  expectContains(message, {joinPath(dir, "test_batch.bin"), "corrupt", "record 2", "label 10"});
}

TEST(Cifar10Reader, MissingFileIsNamed) {
  const std::string dir = freshDir("cifar");
  writeCifarDir(dir, {{1}, {2}, {3}, {4}, {5}}, {6});
  std::filesystem::remove(joinPath(dir, "data_batch_4.bin"));
  std::string message = inputErrorOf([&] { openDataset("cifar10", dir, Split::Train); });
  expectContains(message, {"CIFAR-10 file '" + joinPath(dir, "data_batch_4.bin") + "' is missing"});
  EXPECT_NO_THROW(openDataset("cifar10", dir, Split::Test));
}

// An empty batch file among good ones would silently drop a fifth of the data.
TEST(Cifar10Reader, EmptyBatchFileIsNamed) {
  const std::string dir = freshDir("cifar");
  writeCifarDir(dir, {{1}, {2}, {}, {4}, {5}}, {6});
  expectContains(inputErrorOf([&] { openDataset("cifar10", dir, Split::Train); }),
                 {"CIFAR-10 file '" + joinPath(dir, "data_batch_3.bin") + "' is empty (0 bytes)"});
  writeCifarDir(dir, {{1}, {2}, {3}, {4}, {5}}, {});
  expectContains(inputErrorOf([&] { openDataset("cifar10", dir, Split::Test); }),
                 {"CIFAR-10 file '" + joinPath(dir, "test_batch.bin") + "' is empty (0 bytes)"});
}

// A folder where a batch file belongs (`data_batch_2.bin/`) is named as such, not read as a
// file of the folder's "size".
TEST(Cifar10Reader, FolderInPlaceOfABatchFileIsNamed) {
  const std::string dir = freshDir("cifar");
  writeCifarDir(dir, {{1}, {2}, {3}, {4}, {5}}, {6});
  const std::string victim = joinPath(dir, "data_batch_2.bin");
  std::filesystem::remove(victim);
  std::filesystem::create_directories(joinPath(victim, "inside"));
  expectContains(inputErrorOf([&] { openDataset("cifar10", dir, Split::Train); }),
                 {"CIFAR-10 file '" + victim + "' is not a regular file (a folder)"});
}

TEST(Datasets, UnknownKindListsTheKnownOnes) {
  expectContains(inputErrorOf([&] { openDataset("imagenet", "/x", Split::Train); }),
                 {"'imagenet'", "cifar10", "mnist", "fashion-mnist"});
}

// IDX bytes: magic 0x0000080N, big-endian dimensions, then the values.
std::string idxBytes(int typeByte, const std::vector<uint32_t>& dims, const std::string& values) {
  std::string bytes = {0, 0, char(typeByte), char(dims.size())};
  for (uint32_t d : dims) bytes += {char(d >> 24), char(d >> 16), char(d >> 8), char(d)};
  return bytes + values;
}

// Three 2x3 images with pixel value 10 * image + position, labels 4, 0, 9.
std::string smallImages() {
  std::string values;
  for (int image = 0; image < 3; ++image)
    for (int p = 0; p < 6; ++p) values += char(10 * image + p);
  return idxBytes(0x08, {3, 2, 3}, values);
}
std::string smallLabels() { return idxBytes(0x08, {3}, std::string{4, 0, 9}); }

void writeMnistDir(const std::string& dir, const std::string& prefix, bool gz,
                   const std::string& images = smallImages(),
                   const std::string& labels = smallLabels()) {
  auto write = gz ? &writeGzip : &writeBytes;
  write(joinPath(dir, prefix + "-images-idx3-ubyte" + (gz ? ".gz" : "")), images);
  write(joinPath(dir, prefix + "-labels-idx1-ubyte" + (gz ? ".gz" : "")), labels);
}

void expectSmallImages(const Dataset& dataset) {
  ASSERT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.imageShape(), (ImageShape{1, 2, 3}));
  EXPECT_EQ(dataset.label(0), 4);
  EXPECT_EQ(dataset.label(2), 9);
  std::vector<uint8_t> scratch;
  ImageView image = dataset.image(2, scratch);
  for (int p = 0; p < 6; ++p) EXPECT_EQ(image.pixels[p], 20 + p);
}

TEST(IdxReader, ReadsPlainAndGzipFiles) {
  const std::string plainDir = freshDir("plain");
  writeMnistDir(plainDir, "train", false);
  expectSmallImages(*openDataset("mnist", plainDir, Split::Train));
  const std::string gzDir = freshDir("gz");
  writeMnistDir(gzDir, "t10k", true);
  expectSmallImages(*openDataset("fashion-mnist", gzDir, Split::Test));
}

TEST(IdxReader, PrefersThePlainFileOverTheGzipOne) {
  const std::string dir = freshDir("both");
  writeMnistDir(dir, "train", false);
  writeMnistDir(dir, "train", true, idxBytes(0x08, {1, 1, 1}, "x"), idxBytes(0x08, {1}, "\1"));
  EXPECT_EQ(openDataset("mnist", dir, Split::Train)->size(), 3);
}

TEST(IdxReader, BadMagicNumber) {
  const std::string dir = freshDir("magic");
  writeMnistDir(dir, "train", false, idxBytes(0x0D, {3, 2, 3}, std::string(72, '\0')));
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"MNIST file '" + joinPath(dir, "train-images-idx3-ubyte") + "'",
                  "bad magic number 0x00000D03", "expected 0x00000803"});
  // A labels file where an images file belongs: one dimension instead of three.
  writeMnistDir(dir, "train", false, smallLabels());
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"bad magic number 0x00000801"});
}

TEST(IdxReader, TruncatedHeaderAndData) {
  const std::string dir = freshDir("truncated");
  writeMnistDir(dir, "train", false, smallImages().substr(0, 10));
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"train-images-idx3-ubyte", "truncated", "10 bytes", "16-byte header"});
  writeMnistDir(dir, "train", false, smallImages().substr(0, 30));
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"train-images-idx3-ubyte", "truncated", "30 bytes", "3 x 2 x 3"});
  writeMnistDir(dir, "train", false, smallImages() + "extra");
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"train-images-idx3-ubyte", "corrupt", "5 bytes follow"});
}

TEST(IdxReader, TruncatedGzipStream) {
  const std::string dir = freshDir("gz");
  writeMnistDir(dir, "train", true);
  const std::string path = joinPath(dir, "train-images-idx3-ubyte.gz");
  std::string compressed = readFile(path);
  writeBytes(path, compressed.substr(0, compressed.size() - 12));
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"MNIST file '" + path + "'", "truncated gzip stream"});
}

TEST(IdxReader, EmptyPlainOrGzipFileIsNamed) {
  const std::string dir = freshDir("empty");
  writeMnistDir(dir, "train", false, "");
  expectContains(
      inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
      {"MNIST file '" + joinPath(dir, "train-images-idx3-ubyte") + "' is empty (0 bytes)"});
  const std::string gzDir = freshDir("empty_gz");
  writeMnistDir(gzDir, "train", true, smallImages(), "");
  expectContains(
      inputErrorOf([&] { openDataset("mnist", gzDir, Split::Train); }),
      {"MNIST file '" + joinPath(gzDir, "train-labels-idx1-ubyte.gz") + "' is empty (0 bytes)"});
}

// Extra bytes after the announced values of a gzip file are found without inflating them.
TEST(IdxReader, GzipStreamLongerThanItsHeaderIsCorrupt) {
  const std::string dir = freshDir("gz_long");
  writeMnistDir(dir, "train", true, smallImages() + "extra");
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"MNIST file '" + joinPath(dir, "train-images-idx3-ubyte.gz") + "' is corrupt",
                  "more bytes follow the 3 x 2 x 3 values its header announces"});
}

// A gzip bomb: a valid header announcing 10 images of 28 x 28, then 200 MB of zeros, which
// compress to a few hundred KB. The reader must stop at what the header announces: in a child
// limited to 64 MiB more address space than it has, it fails at once with the reader's message
// (inflating the whole stream would need 200 MB and end in bad_alloc).
TEST(IdxReader, GzipBombFailsFastWithBoundedMemory) {
  const std::string dir = freshDir("gz_bomb");
  const std::string path = joinPath(dir, "train-images-idx3-ubyte.gz");
  {
    gzFile file = gzopen(path.c_str(), "wb9");
    ASSERT_NE(file, nullptr);
    const std::string header = idxBytes(0x08, {10, 28, 28}, std::string(10 * 28 * 28, '\1'));
    ASSERT_EQ(gzwrite(file, header.data(), unsigned(header.size())), int(header.size()));
    const std::string zeros(1 << 20, '\0');
    for (int i = 0; i < 200; ++i)
      ASSERT_EQ(gzwrite(file, zeros.data(), unsigned(zeros.size())), int(zeros.size()));
    ASSERT_EQ(gzclose(file), Z_OK);
  }
  EXPECT_LT(std::filesystem::file_size(path), 1u << 20);
  writeGzip(joinPath(dir, "train-labels-idx1-ubyte.gz"),
            idxBytes(0x08, {10}, std::string(10, '\1')));

  const auto start = std::chrono::steady_clock::now();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit codes: 0 the expected InputError, 3 out of memory, 4 another error, 5 no error.
    std::ifstream status("/proc/self/status");
    long long vmKb = 0;
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmSize:", 0) == 0) vmKb = std::atoll(line.c_str() + 7);
    const rlim_t limit = rlim_t(vmKb) * 1024 + (64u << 20);
    const struct rlimit asLimit = {limit, limit};
    if (vmKb == 0 || setrlimit(RLIMIT_AS, &asLimit) != 0) _exit(6);
    try {
      openDataset("mnist", dir, Split::Train);
    } catch (const InputError& e) {
      const std::string what = e.what();
      _exit(what.find("is corrupt: more bytes follow the 10 x 28 x 28 values") != std::string::npos
                ? 0
                : 4);
    } catch (const std::bad_alloc&) {
      _exit(3);
    } catch (...) {
      _exit(4);
    }
    _exit(5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(WIFEXITED(status)) << "the reader died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "3: out of memory, 4: another error, 5: no error, 6: no limit";
  EXPECT_LT(seconds, 2.0);
}

TEST(IdxReader, LabelOutOfRangeAndCountMismatch) {
  const std::string dir = freshDir("labels");
  writeMnistDir(dir, "train", false, smallImages(), idxBytes(0x08, {3}, std::string{4, 10, 9}));
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"train-labels-idx1-ubyte", "corrupt", "label 10 at index 1"});
  writeMnistDir(dir, "train", false, smallImages(), idxBytes(0x08, {2}, std::string{4, 1}));
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"do not match", "3 images but 2 labels"});
}

TEST(IdxReader, MissingFileNamesBothCandidates) {
  const std::string dir = freshDir("missing");
  writeMnistDir(dir, "train", true);
  std::filesystem::remove(joinPath(dir, "train-labels-idx1-ubyte.gz"));
  expectContains(inputErrorOf([&] { openDataset("fashion-mnist", dir, Split::Train); }),
                 {"Fashion-MNIST file '" + joinPath(dir, "train-labels-idx1-ubyte") + "' is missing",
                  "train-labels-idx1-ubyte.gz"});
}

// A folder in place of an IDX file, plain or gzip, is named as such.
TEST(IdxReader, FolderInPlaceOfAFileIsNamed) {
  const std::string dir = freshDir("plain_folder");
  writeMnistDir(dir, "train", false);
  const std::string plain = joinPath(dir, "train-images-idx3-ubyte");
  std::filesystem::remove(plain);
  std::filesystem::create_directories(plain);
  expectContains(inputErrorOf([&] { openDataset("mnist", dir, Split::Train); }),
                 {"MNIST file '" + plain + "' is not a regular file (a folder)"});
  const std::string gzDir = freshDir("gz_folder");
  writeMnistDir(gzDir, "train", true);
  const std::string gz = joinPath(gzDir, "train-labels-idx1-ubyte.gz");
  std::filesystem::remove(gz);
  std::filesystem::create_directories(gz);
  expectContains(inputErrorOf([&] { openDataset("fashion-mnist", gzDir, Split::Train); }),
                 {"Fashion-MNIST file '" + gz + "' is not a regular file (a folder)"});
}

// The real Fashion-MNIST files installed on the machine (gzip).
TEST(IdxReader, RealFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fileExists(joinPath(dir, "train-images-idx3-ubyte.gz"))) {
    GTEST_SKIP() << "Fashion-MNIST is not installed at " << dir;
  }
  auto train = openDataset("fashion-mnist", dir, Split::Train);
  auto test = openDataset("fashion-mnist", dir, Split::Test);
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(train->imageShape(), (ImageShape{1, 28, 28}));
  EXPECT_EQ(train->numClasses(), 10);
  // Reference values read with Python's gzip module from the same files: the first labels,
  // the pixel sum of the first and the last training image, and the label sums.
  const std::vector<int64_t> firstTrain = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  const std::vector<int64_t> firstTest = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(train->label(i), firstTrain[size_t(i)]);
    EXPECT_EQ(test->label(i), firstTest[size_t(i)]);
  }
  std::vector<uint8_t> scratch;
  auto pixelSum = [&](int64_t index) {
    ImageView image = train->image(index, scratch);
    int64_t sum = 0;
    for (int64_t p = 0; p < image.shape.numel(); ++p) sum += image.pixels[p];
    return sum;
  };
  EXPECT_EQ(pixelSum(0), 76247);
  EXPECT_EQ(pixelSum(59999), 16684);
  int64_t trainLabelSum = 0, testLabelSum = 0;
  for (int64_t i = 0; i < train->size(); ++i) trainLabelSum += train->label(i);
  for (int64_t i = 0; i < test->size(); ++i) testLabelSum += test->label(i);
  EXPECT_EQ(trainLabelSum, 270000);
  EXPECT_EQ(testLabelSum, 45000);
}

}  // namespace
}  // namespace tl::data
