// Round trips, accessors, checkpoint directories and atomic replacement.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/check.h"
#include "common/files.h"
#include "elastic/checkpoint/checkpoint_file.h"
#include "tests/elastic/checkpoint_test_util.h"
#include "tests/support/run_command.h"

namespace tl::elastic {
namespace {

using namespace tl::elastic::testing;

std::vector<std::string> entriesOf(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CheckpointFile, RoundTripKeepsEveryDtypeShapeAndTheManifest) {
  auto path = checkpointPath(tl::testing::freshDir("ckpt_round_trip"));
  CheckpointData written = sampleCheckpoint();
  writeCheckpoint(path, written);
  CheckpointData read = readCheckpoint(path);
  expectIdentical(written, read);
  EXPECT_EQ(read.source, path);
  EXPECT_EQ(read.tensor("scalar int").dim(), 0);
  EXPECT_EQ(read.tensor("scalar int").item<int64_t>(), -9);
  EXPECT_EQ(read.tensor("empty 3d").sizes(), at::IntArrayRef({3, 0, 2}));
}

TEST(CheckpointFile, EmptyCheckpointRoundTrips) {
  auto path = checkpointPath(tl::testing::freshDir("ckpt_empty"));
  writeCheckpoint(path, CheckpointData{});
  CheckpointData read = readCheckpoint(path);
  EXPECT_TRUE(read.tensors.empty());
  EXPECT_EQ(read.manifest, nlohmann::json::object());
}

TEST(CheckpointFile, FloatBitsSurviveExactlyIncludingNanPayloadsAndNegativeZero) {
  auto path = checkpointPath(tl::testing::freshDir("ckpt_bits"));
  CheckpointData data;
  // Quiet and signalling NaNs with payloads, -0.0, the smallest subnormal, infinities.
  data.tensors.emplace_back("f32", floatFromBits({0x7fc00000u, 0x7fc00001u, 0xffbadbadu, 0x7f800001u,
                                                  0x80000000u, 0x00000001u, 0x7f800000u,
                                                  0xff800000u}));
  data.tensors.emplace_back("f64", doubleFromBits({0x7ff8000000000001ull, 0xfff0deadbeef0001ull,
                                                   0x7ff0000000000001ull, 0x8000000000000000ull,
                                                   0x0000000000000001ull}));
  writeCheckpoint(path, data);
  CheckpointData read = readCheckpoint(path);
  expectIdentical(data, read);
  EXPECT_TRUE(std::signbit(read.tensor("f32")[4].item<float>()));
}

TEST(CheckpointFile, ViewsAndNonContiguousTensorsStoreTheirValues) {
  auto path = checkpointPath(tl::testing::freshDir("ckpt_views"));
  at::Tensor base = at::arange(24, at::kFloat).reshape({4, 6});
  at::Tensor parameter = at::randn({3, 3}).requires_grad_(true);
  CheckpointData data;
  data.tensors.emplace_back("transposed", base.t());
  data.tensors.emplace_back("strided slice", base.slice(1, 1, 6, 2));
  data.tensors.emplace_back("offset row", base[2]);
  data.tensors.emplace_back("expanded", at::ones({1, 3}).expand({4, 3}));
  data.tensors.emplace_back("conjugated", at::randn({3}, at::kComplexFloat).conj());
  data.tensors.emplace_back("parameter", parameter);
  writeCheckpoint(path, data);
  CheckpointData read = readCheckpoint(path);
  expectIdentical(data, read);
  EXPECT_TRUE(at::equal(read.tensor("conjugated"), data.tensor("conjugated")));
  EXPECT_FALSE(read.tensor("parameter").requires_grad());
}

TEST(CheckpointFile, PrefixHelpersSplitAndJoinNamespaces) {
  CheckpointData data;
  data.addWithPrefix("model/", {{"a", at::ones({1})}, {"b", at::zeros({2})}});
  data.addWithPrefix("optim/", {{"a", at::ones({3})}});
  ASSERT_EQ(data.tensors.size(), 3u);
  EXPECT_EQ(data.tensors[2].first, "optim/a");
  auto model = data.withPrefix("model/");
  ASSERT_EQ(model.size(), 2u);
  EXPECT_EQ(model[0].first, "a");
  EXPECT_EQ(model[1].first, "b");
  EXPECT_EQ(model[1].second.numel(), 2);
  EXPECT_TRUE(data.withPrefix("nothing/").empty());
  EXPECT_TRUE(data.hasTensor("optim/a"));
  EXPECT_FALSE(data.hasTensor("optim/b"));
}

TEST(CheckpointFile, MissingTensorNamesTheTensorAndTheFile) {
  auto path = checkpointPath(tl::testing::freshDir("ckpt_missing_tensor"));
  writeCheckpoint(path, sampleCheckpoint());
  CheckpointData read = readCheckpoint(path);
  expectContains(inputErrorOf([&] { read.tensor("model/fc.weight"); }),
                 {"'" + path + "'", "has no tensor 'model/fc.weight'"});
  expectContains(inputErrorOf([&] { CheckpointData{}.tensor("x"); }), {"(in memory)", "'x'"});
}

TEST(CheckpointFile, WriterRejectsCallerBugsWithoutTouchingTheFile) {
  auto path = checkpointPath(tl::testing::freshDir("ckpt_caller_bugs"));
  CheckpointData old = sampleCheckpoint();
  writeCheckpoint(path, old);
  CheckpointData duplicate;
  duplicate.tensors = {{"w", at::ones({1})}, {"w", at::ones({2})}};
  EXPECT_THROW(writeCheckpoint(path, duplicate), tl::Error);
  CheckpointData undefined;
  undefined.tensors = {{"u", at::Tensor()}};
  EXPECT_THROW(writeCheckpoint(path, undefined), tl::Error);
  CheckpointData sparse;
  sparse.tensors = {{"s", at::eye(3).to_sparse()}};
  EXPECT_THROW(writeCheckpoint(path, sparse), tl::Error);
  expectIdentical(old, readCheckpoint(path));
}

TEST(CheckpointDir, WritesAndReadsCheckpointTlInsideTheDirectory) {
  auto dir = tl::joinPath(tl::testing::freshDir("ckpt_dir"), "job/ckpt");
  EXPECT_EQ(checkpointPath(dir), dir + "/checkpoint.tl");
  EXPECT_FALSE(hasCheckpoint(dir));
  writeCheckpointDir(dir, sampleCheckpoint());
  EXPECT_TRUE(hasCheckpoint(dir));
  expectIdentical(sampleCheckpoint(), readCheckpointDir(dir));
  EXPECT_EQ(entriesOf(dir), std::vector<std::string>{"checkpoint.tl"});
}

TEST(CheckpointDir, DirectoryWithoutCheckpointIsAClearError) {
  auto dir = tl::testing::freshDir("ckpt_dir_empty");
  EXPECT_EQ(inputErrorOf([&] { readCheckpointDir(dir); }),
            "--resume '" + dir + "': no checkpoint found (expected " + dir + "/checkpoint.tl)");
  auto missing = dir + "/nope";
  expectContains(inputErrorOf([&] { readCheckpointDir(missing, "checkpoint dir"); }),
                 {"checkpoint dir '" + missing + "'", "no checkpoint found",
                  "the directory does not exist"});
}

TEST(CheckpointAtomicity, UnwritableLocationIsAnInputErrorNamingThePath) {
  auto dir = tl::testing::freshDir("ckpt_unwritable");
  auto plainFile = tl::joinPath(dir, "plain-file");
  writeBytes(plainFile, "x");
  auto path = tl::joinPath(plainFile, "checkpoint.tl");
  expectContains(inputErrorOf([&] { writeCheckpoint(path, sampleCheckpoint()); }), {path});
  expectContains(inputErrorOf([&] { writeCheckpointDir(tl::joinPath(plainFile, "d"), {}); }),
                 {"checkpoint directory", plainFile});
}

CheckpointData largeCheckpoint(int64_t floats) {
  CheckpointData data;
  data.manifest = {{"step", 2}};
  data.tensors.emplace_back("big", at::randn({floats}));
  return data;
}

// Restores the file-size limit and SIGXFSZ handling on scope exit.
struct FileSizeLimit {
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved);
    previousHandler = ::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG instead
    rlimit limited = saved;
    limited.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limited);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved);
    ::signal(SIGXFSZ, previousHandler);
  }
  rlimit saved{};
  sighandler_t previousHandler;
};

TEST(CheckpointAtomicity, DiskFullMidWriteKeepsTheOldCheckpointAndLeavesNoTemporaries) {
  auto dir = tl::testing::freshDir("ckpt_disk_full");
  auto path = checkpointPath(dir);
  CheckpointData old = sampleCheckpoint();
  writeCheckpoint(path, old);
  std::string message;
  {
    // The new image is ~4 MB; writes past 1 MB fail as on a full disk.
    FileSizeLimit limit(1 << 20);
    message = inputErrorOf([&] { writeCheckpoint(path, largeCheckpoint(1 << 20)); });
  }
  expectContains(message, {path});
  expectIdentical(old, readCheckpoint(path));
  EXPECT_EQ(entriesOf(dir), std::vector<std::string>{"checkpoint.tl"});
}

// Runs in the death test's child: no core dump, and a file-size limit with SIGXFSZ's default
// action, which kills the writer in the middle of write().
void writeUnderFileSizeLimit(const std::string& path, const CheckpointData& data, rlim_t bytes) {
  rlimit noCore{};
  ::setrlimit(RLIMIT_CORE, &noCore);
  rlimit limit{};
  ::getrlimit(RLIMIT_FSIZE, &limit);
  limit.rlim_cur = bytes;
  ::setrlimit(RLIMIT_FSIZE, &limit);
  writeCheckpoint(path, data);
  std::exit(0);
}

TEST(CheckpointAtomicityDeathTest, ProcessKilledMidWriteLeavesTheOldCheckpoint) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto dir = tl::testing::freshDir("ckpt_killed");
  auto path = checkpointPath(dir);
  CheckpointData old = sampleCheckpoint();
  writeCheckpoint(path, old);
  // A crash at the worst moment, without any chance to clean up.
  EXPECT_EXIT(writeUnderFileSizeLimit(path, largeCheckpoint(1 << 20), 1 << 20),
              ::testing::KilledBySignal(SIGXFSZ), "");
  expectIdentical(old, readCheckpoint(path));
  // The crashed writer's temporary is left over, but only as a hidden file beside the checkpoint.
  bool leftOver = false;
  for (const auto& name : entriesOf(dir)) {
    if (name != "checkpoint.tl") {
      EXPECT_EQ(name.rfind(".checkpoint.tl.tmp.", 0), 0u) << name;
      leftOver = true;
    }
  }
  EXPECT_TRUE(leftOver) << "the writer did not get as far as its temporary file";
  // The next write into the folder removes the dead writer's temporary.
  CheckpointData next = largeCheckpoint(1000);
  writeCheckpoint(path, next);
  expectIdentical(next, readCheckpoint(path));
  EXPECT_EQ(entriesOf(dir), std::vector<std::string>{"checkpoint.tl"});
}

// A temporary whose writer may still be alive is never touched: one of a live process of this
// host (this test, holding the writer's lock), and one of another host (nothing proves it dead).
TEST(CheckpointFile, TemporariesOfLiveOrUnknownWritersAreKept) {
  auto dir = tl::testing::freshDir("ckpt_live_writer");
  auto path = checkpointPath(dir);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string live =
      ".checkpoint.tl.tmp." + std::to_string(::getpid()) + "@" + host + ".aB3dE9";
  const std::string foreign = ".checkpoint.tl.tmp.1@elsewhere.example.Zz9Yy8";
  int fd = ::open(tl::joinPath(dir, live).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  std::ofstream(tl::joinPath(dir, foreign)) << "partial";
  writeCheckpoint(path, sampleCheckpoint());
  std::vector<std::string> expected = {foreign, live, "checkpoint.tl"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(entriesOf(dir), expected);
  ::close(fd);
}

// A ResNet-18 checkpoint (11.7 M parameters + SGD momentum, ~94 MB in ~120 tensors) should
// take well under a few seconds each way.
TEST(CheckpointFile, ResNet18SizedCheckpointIsFast) {
  auto path = checkpointPath(tl::testing::freshDir("ckpt_large"));
  CheckpointData data;
  int64_t total = 0;
  for (int i = 0; total < 2 * 11689512; ++i) {
    int64_t n = (i % 3 == 0) ? 64 : 589824;  // BatchNorm vectors and 3x3 conv kernels
    data.tensors.emplace_back("t" + std::to_string(i), at::randn({n}));
    total += n;
  }
  auto t0 = std::chrono::steady_clock::now();
  writeCheckpoint(path, data);
  auto t1 = std::chrono::steady_clock::now();
  CheckpointData read = readCheckpoint(path);
  auto t2 = std::chrono::steady_clock::now();
  double writeSeconds = std::chrono::duration<double>(t1 - t0).count();
  double readSeconds = std::chrono::duration<double>(t2 - t1).count();
  std::printf("checkpoint of %.1f MB in %zu tensors: write %.3f s, read %.3f s\n",
              double(std::filesystem::file_size(path)) / 1e6, data.tensors.size(), writeSeconds,
              readSeconds);
  expectIdentical(data, read);
  // Generous bounds for a loaded CI machine; the point is "seconds, not minutes".
  EXPECT_LT(writeSeconds, 20.0);
  EXPECT_LT(readSeconds, 20.0);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tl::elastic
