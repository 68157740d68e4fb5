// End-to-end: tl-profile sweeps loader workers on a tiny job under mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tools/submit/csv.h"
#include "tests/support/png_check.h"
#include "tests/support/run_command.h"

namespace {

using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gDataDir;

class ProfileE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gDataDir = freshDir("profile_data");
    auto r = runCommand(
        std::string(TL_DATA_BIN) + " synth --out " + gDataDir + " --train 512 --test 64 --seed 2",
        120, freshDir("profile_data_gen"));
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  static std::string job() {
    return " -- --model cnn --dataset cifar10 --data-dir " + gDataDir + " --batch 16 --log-every 0";
  }
};

TEST_F(ProfileE2E, SweepWritesTableCsvAndPlot) {
  auto out = freshDir("profile_sweep");
  auto r = runCommand(std::string(TL_PROFILE_BIN) +
                          " --workers-sweep 2,0,1 --max-iterations 8 --warmup-steps 2 "
                          "--oversubscribe --cpus 0-1 --out " +
                          out + job(),
                      300, out);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("recommended workers: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("modelled images/s"), std::string::npos) << r.out;

  auto records = tl::submit::parseCsv(slurp(out + "/profile.csv"), "profile.csv");
  ASSERT_EQ(records.size(), 4u) << "header and one row per w";
  EXPECT_EQ(records[0].fields[0], "workers");
  for (size_t i = 1; i < records.size(); ++i) {
    EXPECT_EQ(records[i].fields[0], std::to_string(i - 1)) << "rows in increasing w";
    EXPECT_GT(std::stod(records[i].fields[1]), 0) << "measured images/s";
    EXPECT_FALSE(records[i].fields[2].empty()) << "modelled images/s";
    EXPECT_EQ(records[i].fields[4], "1") << "warm-up left out";
    EXPECT_EQ(records[i].fields[5], "0");
    EXPECT_TRUE(std::filesystem::exists(out + "/burst_" + std::to_string(i - 1) + "/summary.json"));
  }
  auto profile = nlohmann::json::parse(slurp(out + "/profile.json"));
  EXPECT_TRUE(profile["fitted"].get<bool>());
  // The recommendation is the smallest w whose modelled rate is within 2% (the default
  // --tolerance) of the best modelled rate in the table.
  double bestModelled = 0;
  for (size_t i = 1; i < records.size(); ++i)
    bestModelled = std::max(bestModelled, std::stod(records[i].fields[2]));
  int expected = -1;
  for (size_t i = 1; i < records.size() && expected < 0; ++i) {
    if (std::stod(records[i].fields[2]) >= 0.98 * bestModelled) expected = int(i - 1);
  }
  EXPECT_EQ(profile["recommended_workers"].get<int>(), expected) << slurp(out + "/profile.csv");
  EXPECT_NE(r.out.find("recommended workers: " + std::to_string(expected)), std::string::npos)
      << r.out;

  ASSERT_TRUE(tl::testing::hasPngSignature(slurp(out + "/profile.png")));
  auto png = tl::testing::decodePng(out + "/profile.png");
  ASSERT_TRUE(png.ok) << png.error;
  EXPECT_EQ(png.width, 800);
  EXPECT_EQ(png.height, 500);
  EXPECT_GE(png.distinctColours(), 4);
  EXPECT_GT(png.inkShare(), 0.02) << "the plot is blank";
}

// A device far slower than loading (sim: 150 images/s, no compute on a core): loading on the
// training thread keeps up, so extra loader workers buy nothing and the answer is 0.
TEST_F(ProfileE2E, ASlowDeviceNeedsNoLoaderWorkers) {
  auto out = freshDir("profile_slow_device");
  auto r = runCommand(std::string(TL_PROFILE_BIN) +
                          " --workers-sweep 0,1,2 --max-iterations 8 --warmup-steps 2 "
                          "--tolerance 0.1 --oversubscribe --out " +
                          out + job() + " --device sim:150",
                      300, out);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  auto profile = nlohmann::json::parse(slurp(out + "/profile.json"));
  EXPECT_EQ(profile["recommended_workers"].get<int>(), 0) << slurp(out + "/profile.csv");
  EXPECT_NE(r.out.find("recommended workers: 0"), std::string::npos) << r.out;
}

TEST_F(ProfileE2E, FlagsTheBurstsOwnAreRefused) {
  auto out = freshDir("profile_bad");
  auto r =
      runCommand(std::string(TL_PROFILE_BIN) + " --out " + out + job() + " --steps 5", 60, out);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("job flag --steps: tl-profile sets it"), std::string::npos) << r.err;
  r = runCommand(std::string(TL_PROFILE_BIN) + " --workers-sweep 1,x --out " + out + job(), 60,
                 out);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--workers-sweep: expected an integer, got 'x'"), std::string::npos)
      << r.err;
}

// A burst that fails while it runs (here through an mpirun wrapper: a job tl-launch refuses is
// found before any burst) is reported with its error line, and the profile says so.
TEST_F(ProfileE2E, AFailingBurstIsReportedNotFatal) {
  auto out = freshDir("profile_fail");
  const std::string wrapper = out + "/mpirun-wrapper.sh";
  std::ofstream(wrapper)
      << "#!/bin/sh\necho 'tl-launch: error: rank 0: lost its device' >&2\nexit 1\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  auto r =
      runCommand(std::string(TL_PROFILE_BIN) + " --workers-sweep 1 --max-iterations 4 --mpirun " +
                     wrapper + " --out " + out + job(),
                 120, out);
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("recommended workers: none"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("burst w=1 failed: exit status 1: tl-launch: error: rank 0: lost its device"),
      std::string::npos)
      << r.out;
  EXPECT_NE(slurp(out + "/profile.csv").find("\n1,,,,,"), std::string::npos);
}

// A job that cannot start is checked once, before any burst, and its error is printed.
TEST_F(ProfileE2E, AJobThatCannotStartIsReportedBeforeAnyBurst) {
  auto out = freshDir("profile_refused");
  auto r = runCommand(std::string(TL_PROFILE_BIN) +
                          " --workers-sweep 0,1,2 --max-iterations 4 --oversubscribe --out " + out +
                          " -- --model resnet --depth 7 --dataset cifar10 --data-dir " + gDataDir,
                      120, out);
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("depth 7 is not of the form 6n+2"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(out + "/burst_0")) << "no burst may run";
  EXPECT_LT(r.seconds, 30);
}

}  // namespace
