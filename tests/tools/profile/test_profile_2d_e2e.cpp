// End-to-end: tl-profile --cache-mb on a tiny JPEG folder: the worker sweep at the full cache
// budget, the memory dimension from the bursts' cache figures, two check bursts, and
// profile_2d.csv/json/png.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tools/submit/csv.h"
#include "tests/support/png_check.h"
#include "tests/support/run_command.h"

namespace {

using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gJpegDir;

class Profile2dE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gJpegDir = freshDir("profile_2d_data");
    auto r = runCommand(std::string(TL_DATA_BIN) + " jpeg-synth --out " + gJpegDir +
                            " --classes 2 --train 32 --val 8 --min-size 40 --max-size 80 --seed 3",
                        120, freshDir("profile_2d_gen"));
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  // One process, batch 8: 4 steps an epoch.
  static std::string job() {
    return " -- --dataset imagefolder --data-dir " + gJpegDir +
           " --image-size 32 --model cnn --batch 8 --log-every 0";
  }
  // tl-profile --cache-mb 0.5 with `flags` into `out`.
  static tl::testing::CommandResult profile(const std::string& flags, const std::string& out) {
    return runCommand(std::string(TL_PROFILE_BIN) + " " + flags +
                          " --oversubscribe --cache-mb 0.5 --out " + out + job(),
                      300, out);
  }
};

TEST_F(Profile2dE2E, GridChecksAndHeatMap) {
  auto out = freshDir("profile_2d");
  // 12 steps = 3 epochs; the first epoch (4 steps, all misses) is left out of every rate.
  auto r = profile("--workers-sweep 0,1,2 --max-iterations 12 --warmup-steps 2", out);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("memory dimension (at --cache-mb 0.50)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recommended: "), std::string::npos) << r.out;

  auto j = nlohmann::json::parse(slurp(out + "/profile_2d.json"));
  ASSERT_TRUE(j["memory_measured"].get<bool>()) << j.dump();
  EXPECT_GT(j["storage_seconds_per_byte"].get<double>(), 0);
  EXPECT_GT(j["sample_bytes"].get<double>(), 500);
  EXPECT_LT(j["dataset_bytes"].get<double>(), 0.5 * 1048576) << "the full budget holds it all";
  EXPECT_NEAR(j["miss_share_at_full_budget"].get<double>(), 0, 0.05) << "all cached after epoch 1";
  EXPECT_TRUE(j["miss_share_measured_warm"].get<bool>());
  EXPECT_NE(r.out.find("(measured warm: the epochs after the first)"), std::string::npos) << r.out;
  ASSERT_EQ(j["checks"].size(), 2u) << "default checks: the recommended w at 0 and M/2";
  for (const auto& c : j["checks"]) {
    EXPECT_GT(c["measured"].get<double>(), 0) << c.dump();
    EXPECT_GT(c["predicted"].get<double>(), 0) << c.dump();
    EXPECT_TRUE(c["measured_warm"].get<bool>()) << c.dump();
  }
  EXPECT_TRUE(std::filesystem::exists(out + "/check_w" +
                                      std::to_string(j["checks"][0]["workers"].get<int>()) +
                                      "_cache0/metrics.jsonl"));

  // 3 worker counts (0 too: it was swept) x 5 budgets; the prediction never falls as the
  // budget grows.
  auto rows = tl::submit::parseCsv(slurp(out + "/profile_2d.csv"), "profile_2d.csv");
  ASSERT_EQ(rows.size(), 16u);
  EXPECT_EQ(rows[1].fields[0], "0");
  EXPECT_EQ(rows[0].fields[0], "workers");
  int measured = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_GT(std::stod(rows[i].fields[2]), 0);
    if (i > 3) {
      EXPECT_GE(std::stod(rows[i].fields[2]) + 1e-6, std::stod(rows[i - 3].fields[2]))
          << "same workers, more cache";
    }
    measured += !rows[i].fields[3].empty();
  }
  EXPECT_EQ(measured, 2) << "the check points are on the grid";
  const int w = j["recommended_workers"].get<int>();
  EXPECT_TRUE(w >= 0 && w <= 2);
  const double mb = j["recommended_cache_mb"].get<double>();
  EXPECT_TRUE(mb >= 0 && mb <= 0.5);

  auto png = tl::testing::decodePng(out + "/profile_2d.png");
  ASSERT_TRUE(png.ok) << png.error;
  EXPECT_EQ(png.width, 800);
  EXPECT_GT(png.inkShare(), 0.3);
}

// Bursts shorter than an epoch never re-read a sample: the output says the cache was measured
// cold and takes the steady miss share from the cache model instead of a silent 100 %.
TEST_F(Profile2dE2E, ColdBurstsAreSaidToBeCold) {
  auto out = freshDir("profile_2d_cold");
  auto r = profile("--workers-sweep 1 --max-iterations 3 --warmup-steps 1 --cache-check 1:0", out);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("the bursts measured the cache COLD"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("COLD (within its first epoch)"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(slurp(out + "/profile_2d.json"));
  EXPECT_FALSE(j["miss_share_measured_warm"].get<bool>());
  EXPECT_NEAR(j["miss_share_at_full_budget"].get<double>(), 0, 1e-9) << "the model: it all fits";
  EXPECT_DOUBLE_EQ(j["fitted_miss_share"].get<double>(), 1.0) << "every read was a first read";
  EXPECT_FALSE(j["checks"][0]["measured_warm"].get<bool>());
}

TEST_F(Profile2dE2E, BadCacheFlagsAreRefused) {
  auto out = freshDir("profile_2d_bad");
  auto r = runCommand(std::string(TL_PROFILE_BIN) + " --cache-mb 1 --cache-check 2:x --out " +
                          out + job(),
                      60, out);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--cache-check: expected a size in MiB (a number >= 0), got 'x'"),
            std::string::npos)
      << r.err;
  r = runCommand(std::string(TL_PROFILE_BIN) + " --cache-mb 1 --out " + out + job() +
                     " --cache-mb 2",
                 60, out);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("job flag --cache-mb: tl-profile --cache-mb sets it"), std::string::npos)
      << r.err;
  r = runCommand(std::string(TL_PROFILE_BIN) + " --cache-grid 1,2 --out " + out + job(), 60, out);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--cache-grid and --cache-check need --cache-mb"), std::string::npos)
      << r.err;
}

}  // namespace
