// End-to-end: tl-launch under real mpirun on a synthetic JPEG image folder written by
// `tl-data jpeg-synth`: a short run trains and evaluates, its parameters do not depend on the
// loader threads, and a corrupt file stops the job with a message naming it unless
// --skip-corrupt is given.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.h"

namespace {

using tl::testing::CommandResult;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gDataDir;

class ImageFolderE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gDataDir = freshDir("imagefolder_e2e_data");
    auto scratch = freshDir("imagefolder_e2e_gen");
    auto r = runCommand(std::string(TL_DATA_BIN) + " jpeg-synth --out " + gDataDir +
                            " --classes 4 --train 64 --val 16 --min-size 40 --max-size 80 --seed 2",
                        120, scratch);
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  // Two processes, 2 steps of batch 8, 32x32 crops.
  static CommandResult launch(const std::string& dataDir, const std::string& outDir,
                              const std::string& extra, int steps = 2) {
    const std::string cmd = std::string(TL_MPIEXEC) + " --oversubscribe -np 2 " + TL_LAUNCH_BIN +
                            " --dataset imagefolder --data-dir " + dataDir +
                            " --image-size 32 --model cnn --batch 8 --steps " + std::to_string(steps) +
                            " --log-every 0 --seed 5 --output-dir " + outDir + " " + extra;
    return runCommand(cmd, 240, outDir);
  }

  static nlohmann::json summary(const std::string& outDir) {
    return nlohmann::json::parse(slurp(outDir + "/summary.json"));
  }
};

TEST_F(ImageFolderE2E, TrainsAndEvaluatesOnTwoProcesses) {
  const std::string out = freshDir("imagefolder_e2e_train");
  const CommandResult r = launch(gDataDir, out, "--eval --workers 2");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const nlohmann::json s = summary(out);
  EXPECT_EQ(s["steps"], 2);
  EXPECT_EQ(s["processes"], 2);
  EXPECT_EQ(s["params_sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(s.contains("test_acc")) << s.dump();
}

TEST_F(ImageFolderE2E, SameParamsWhateverTheLoaderThreads) {
  const std::string a = freshDir("imagefolder_e2e_w0"), b = freshDir("imagefolder_e2e_w3");
  const CommandResult ra = launch(gDataDir, a, "--workers 0");
  ASSERT_EQ(ra.exitCode, 0) << ra.err;
  const CommandResult rb = launch(gDataDir, b, "--workers 3");
  ASSERT_EQ(rb.exitCode, 0) << rb.err;
  EXPECT_EQ(summary(a)["params_sha256"], summary(b)["params_sha256"]);
}

// --cache-mb with a budget below the data set (each process caches what fits of the 64 files,
// ~190 kB): the same parameters as without a cache, and per-epoch cache figures in
// metrics.jsonl that add up to every sample the lead loaded, within the budget.
TEST_F(ImageFolderE2E, CacheKeepsTheParamsAndReportsPerEpoch) {
  const std::string a = freshDir("imagefolder_e2e_nocache"), b = freshDir("imagefolder_e2e_cache");
  const CommandResult ra = launch(gDataDir, a, "--workers 2", 12);
  ASSERT_EQ(ra.exitCode, 0) << ra.err;
  const CommandResult rb = launch(gDataDir, b, "--workers 2 --cache-mb 0.08", 12);
  ASSERT_EQ(rb.exitCode, 0) << rb.err;
  EXPECT_EQ(summary(a)["params_sha256"], summary(b)["params_sha256"]);
  std::ifstream metrics(b + "/metrics.jsonl");
  int64_t loaded = 0, hits = 0, fromStorage = 0, epochs = 0;
  for (std::string line; std::getline(metrics, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["type"] != "epoch") continue;
    ASSERT_TRUE(record.contains("cache")) << line;
    const nlohmann::json& c = record["cache"];
    EXPECT_EQ(c["budget_bytes"], int64_t(0.08 * 1024 * 1024));
    EXPECT_LE(c["peak_used_bytes"].get<int64_t>(), c["budget_bytes"].get<int64_t>());
    EXPECT_GT(c["cached_samples"].get<int64_t>(), 0);
    loaded += c["hits"].get<int64_t>() + c["misses"].get<int64_t>();
    hits += c["hits"].get<int64_t>();
    fromStorage += c["bytes_from_storage"].get<int64_t>();
    ++epochs;
  }
  EXPECT_EQ(epochs, 3);
  EXPECT_EQ(loaded, 12 * 8) << "the lead's 12 batches of 8";
  EXPECT_GT(hits, 0);
  EXPECT_GT(fromStorage, 0);
}

// A copy of the data in which every file of class_01 but one is damaged, so some early batch is
// sure to meet one. Returns how many files were damaged.
int damagedCopy(const std::string& data) {
  std::filesystem::copy(gDataDir, data, std::filesystem::copy_options::recursive);
  int damaged = 0;
  for (const auto& entry : std::filesystem::directory_iterator(data + "/train/class_01")) {
    if (entry.path().filename() == "img_00001.jpg") continue;
    std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << "not a jpeg";
    ++damaged;
  }
  return damaged;
}

TEST_F(ImageFolderE2E, CorruptFileFailsNamingItUnlessSkipped) {
  const std::string data = freshDir("imagefolder_e2e_corrupt");
  ASSERT_EQ(damagedCopy(data), 15);
  const std::string failed = freshDir("imagefolder_e2e_corrupt_fail");
  const CommandResult r = launch(data, failed, "--workers 2");
  EXPECT_NE(r.exitCode, 0) << r.out << r.err;
  EXPECT_NE(r.exitCode, 124) << "hung: " << r.err;
  EXPECT_NE(r.err.find("is not a valid JPEG: Not a JPEG file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(data + "/train/class_01/img_"), std::string::npos) << r.err;

  const std::string skipped = freshDir("imagefolder_e2e_corrupt_skip");
  const CommandResult s = launch(data, skipped, "--workers 2 --skip-corrupt");
  ASSERT_EQ(s.exitCode, 0) << s.out << s.err;
  // Logged once per file and process, on the job's log (stdout).
  EXPECT_NE((s.out + s.err).find("skipping a corrupt image (--skip-corrupt): image '" + data +
                                 "/train/class_01/img_"),
            std::string::npos)
      << s.out << s.err;
  EXPECT_EQ(summary(skipped)["steps"], 2);
  // summary.json counts each replaced file once, whichever processes met it: the distinct files
  // the processes logged.
  std::set<std::string> logged;
  const std::string log = s.out + s.err, marker = "skipping a corrupt image (--skip-corrupt): image '";
  for (size_t at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1)) {
    const size_t begin = at + marker.size();
    logged.insert(log.substr(begin, log.find('\'', begin) - begin));
  }
  EXPECT_GE(logged.size(), 1u);
  EXPECT_EQ(summary(skipped)["corrupt_files_skipped"], logged.size()) << log;
}

// An error found while the job runs ends it through MPI_Abort, whose banner mpirun prints from a
// message of its own. The user must read tl's reason before that banner, not below it, also
// when the machine is busy (three processes spinning on CI's two cores). Before the aborting
// rank waited for its output to be read, the reason came out below the banner in 1 run in 5
// to 10 under such load: a race, so this catches a regression only often, not always;
// test_comm_local checks the waiting itself (3 runs: about 1 s each on an idle machine).
TEST_F(ImageFolderE2E, ErrorWhileRunningComesBeforeMpirunsBanner) {
  const std::string data = freshDir("imagefolder_e2e_banner");
  ASSERT_EQ(damagedCopy(data), 15);
  struct Hogs {
    std::vector<pid_t> pids;
    ~Hogs() {
      for (pid_t pid : pids) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } hogs;
  for (int i = 0; i < 3; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(120);  // never outlive the test, whatever happens to it
      for (volatile unsigned spin = 0;; spin = spin + 1) {
      }
    }
    hogs.pids.push_back(pid);
  }
  for (int run = 0; run < 3; ++run) {
    const std::string out = freshDir("imagefolder_e2e_banner_" + std::to_string(run));
    // Enough steps that a damaged file is met for sure, whatever the loader threads prefetch.
    const CommandResult r = launch(data, out, "--workers 2", /*steps=*/8);
    EXPECT_NE(r.exitCode, 0) << r.err;
    const size_t reason = r.err.find("tl-launch: error: image '" + data + "/train/class_01/img_");
    ASSERT_NE(reason, std::string::npos) << r.out << r.err;
    const size_t banner = r.err.find("\n-----");
    EXPECT_TRUE(banner == std::string::npos || reason < banner) << "run " << run << ":\n" << r.err;
  }
}

TEST_F(ImageFolderE2E, ImageFlagsNeedAnImageFolder) {
  const std::string out = freshDir("imagefolder_e2e_flags");
  const CommandResult r = runCommand(std::string(TL_LAUNCH_BIN) +
                                         " --dataset cifar10 --data-dir " + gDataDir +
                                         " --image-size 64 --steps 1 --output-dir " + out,
                                     60, out);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("--image-size and --skip-corrupt apply to --dataset imagefolder only"),
            std::string::npos)
      << r.err;
  const CommandResult c = runCommand(std::string(TL_LAUNCH_BIN) +
                                         " --dataset cifar10 --data-dir " + gDataDir +
                                         " --cache-mb 64 --steps 1 --output-dir " + out,
                                     60, out);
  EXPECT_EQ(c.exitCode, 2);
  EXPECT_NE(c.err.find("--cache-mb applies to --dataset imagefolder only"), std::string::npos)
      << c.err;
}

// --emulate-storage-mbps R: every read from storage lasts at least bytes / R (the epoch
// records' storage_s say so), the trained parameters stay those of the real-speed run, and the
// summary marks the run as emulated. (Bad values: test_job_flags.)
TEST_F(ImageFolderE2E, EmulatedStorageOnlyAddsWaiting) {
  const std::string a = freshDir("imagefolder_e2e_storage_real"),
                    b = freshDir("imagefolder_e2e_storage_slow");
  constexpr double kMbps = 0.2;
  ASSERT_EQ(launch(gDataDir, a, "--workers 1 --cache-mb 0", 4).exitCode, 0);
  const CommandResult rb =
      launch(gDataDir, b, "--workers 1 --cache-mb 0 --emulate-storage-mbps 0.2", 4);
  ASSERT_EQ(rb.exitCode, 0) << rb.err;
  EXPECT_EQ(summary(a)["params_sha256"], summary(b)["params_sha256"]);
  EXPECT_EQ(summary(b)["emulated"], true);
  EXPECT_DOUBLE_EQ(summary(b)["emulated_storage_mbps"].get<double>(), kMbps);
  EXPECT_FALSE(summary(a).value("emulated", false));

  auto storage = [](const std::string& dir) {
    double bytes = 0, seconds = 0;
    std::ifstream metrics(dir + "/metrics.jsonl");
    for (std::string line; std::getline(metrics, line);) {
      const nlohmann::json record = nlohmann::json::parse(line);
      if (record["type"] != "epoch") continue;
      bytes += record["cache"]["bytes_from_storage"].get<double>();
      seconds += record["cache"]["storage_s"].get<double>();
    }
    return std::make_pair(bytes, seconds);
  };
  const auto [slowBytes, slowSeconds] = storage(b);
  ASSERT_GT(slowBytes, 10000);
  EXPECT_GE(slowSeconds, slowBytes / (kMbps * 1e6)) << "each read waits out bytes / R";
  const auto [realBytes, realSeconds] = storage(a);
  EXPECT_LT(realSeconds, 0.25 * realBytes / (kMbps * 1e6)) << "this folder's real reads are faster";
}

}  // namespace
