// End-to-end: tl-launch under real mpirun on a synthetic JPEG image folder written by
// `tl-data jpeg-synth`: a short run trains and evaluates, its parameters do not depend on the
// loader threads, and a corrupt file stops the job with a message naming it unless
// --skip-corrupt is given.
#include <gtest/gtest.h>

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
                              const std::string& extra) {
    const std::string cmd = std::string(TL_MPIEXEC) + " --oversubscribe -np 2 " + TL_LAUNCH_BIN +
                            " --dataset imagefolder --data-dir " + dataDir +
                            " --image-size 32 --model cnn --batch 8 --steps 2 --log-every 0"
                            " --seed 5 --output-dir " + outDir + " " + extra;
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

TEST_F(ImageFolderE2E, CorruptFileFailsNamingItUnlessSkipped) {
  const std::string data = freshDir("imagefolder_e2e_corrupt");
  std::filesystem::copy(gDataDir, data, std::filesystem::copy_options::recursive);
  // Every file of class_01 but one is damaged, so some early batch is sure to meet one.
  int damaged = 0;
  std::string named;
  for (const auto& entry : std::filesystem::directory_iterator(data + "/train/class_01")) {
    if (entry.path().filename() == "img_00001.jpg") continue;
    std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << "not a jpeg";
    named = entry.path().string();
    ++damaged;
  }
  ASSERT_EQ(damaged, 15);
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
}

}  // namespace
