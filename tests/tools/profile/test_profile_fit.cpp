// tl-profile's analysis on synthetic numbers: reading a burst (warm-up left out), fitting the
// throughput model both ways, and the recommendation.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tools/profile/burst.h"
#include "tools/profile/profile_fit.h"
#include "tools/profile/profile_report.h"
#include "tests/support/run_command.h"

namespace {

using namespace tl::profile;

TEST(Recommendation, SmallestWithinToleranceOfTheBest) {
  std::vector<std::pair<int, double>> rates = {{0, 100}, {1, 200}, {2, 390}, {3, 398}, {4, 400}};
  EXPECT_EQ(recommendWorkers(rates, 0.02), 3);  // 392 is the bar
  EXPECT_EQ(recommendWorkers(rates, 0.03), 2);  // 388
  EXPECT_EQ(recommendWorkers(rates, 0.0), 4);
  EXPECT_EQ(recommendWorkers({{4, 10}, {2, 10}, {8, 9}}, 0.02), 2) << "ties go to fewer workers";
  EXPECT_EQ(recommendWorkers({}, 0.02), -1);
}

// Bursts measured from a known model: rate(w) = min(C, w / (a*w + b)).
BurstMeasurement burst(int w, double rate, double wait) {
  BurstMeasurement b;
  b.workers = w;
  b.exitCode = 0;
  b.imagesPerSecond = rate;
  b.waitShare = wait;
  return b;
}

TEST(ProfileFit, FromImagesPerSecondRecoversTheModel) {
  const double a = 0.001, b = 0.01, C = 250;
  auto rate = [&](int w) { return std::min(C, w / (a * w + b)); };
  std::vector<BurstMeasurement> bursts = {burst(0, 60, 0.8), burst(1, rate(1), 0.5),
                                          burst(2, rate(2), 0.3), burst(4, rate(4), 0.01),
                                          burst(6, rate(6) * 0.99, 0.0)};
  ProfileFit fit = fitProfile(bursts);
  ASSERT_TRUE(fit.fitted);
  EXPECT_EQ(fit.source, "images/s per worker count");
  EXPECT_NEAR(fit.model.a, a, 1e-6);
  EXPECT_NEAR(fit.model.b, b, 1e-6);
  EXPECT_DOUBLE_EQ(fit.model.computeRate, C);
  EXPECT_NEAR(fit.jobRate(3), 3 / (3 * a + b), 0.01);  // images are whole numbers
  // Predicted: w=3 230.8, w=4..6 250: the smallest within 2% of 250 is 4.
  EXPECT_EQ(recommendWorkers(candidateRates(fit, bursts), 0.02), 4);
}

TEST(ProfileFit, WhenTheLoaderNeverLimitsTheSmallestWorkerCountReachesC) {
  std::vector<BurstMeasurement> bursts = {burst(1, 300, 0.01), burst(2, 305, 0.0),
                                          burst(4, 298, 0.02)};
  ProfileFit fit = fitProfile(bursts);
  ASSERT_TRUE(fit.fitted);
  EXPECT_DOUBLE_EQ(fit.model.computeRate, 305);
  EXPECT_DOUBLE_EQ(fit.jobRate(1), 305);
  EXPECT_EQ(recommendWorkers(candidateRates(fit, bursts), 0.02), 1);
}

TEST(ProfileFit, WhenEveryBurstIsLoaderBoundThereIsNoCeiling) {
  std::vector<BurstMeasurement> bursts = {burst(1, 100, 0.6), burst(2, 190, 0.5),
                                          burst(3, 270, 0.4)};
  ProfileFit fit = fitProfile(bursts);
  ASSERT_TRUE(fit.fitted);
  EXPECT_TRUE(std::isinf(fit.model.computeRate));
  EXPECT_EQ(recommendWorkers(candidateRates(fit, bursts), 0.02), 3);
}

TEST(ProfileFit, FromLoaderMeasurementsScalesToTheJob) {
  const double a = 0.002, b = 0.02, C = 120;  // per process
  std::vector<BurstMeasurement> bursts;
  for (int w : {1, 2, 4}) {
    BurstMeasurement m = burst(w, 1, 0.1);
    m.hasLoaderMeasurement = true;
    // w workers busy 10 s each at t(w) = a*w + b seconds per image apiece.
    m.loader = {w, w * 10.0, int64_t(std::llround(w * 10.0 / (a * w + b)))};
    m.compute = {10.0, int64_t(C * 10)};
    m.jobPerProcessRatio = 2;
    bursts.push_back(m);
  }
  ProfileFit fit = fitProfile(bursts);
  ASSERT_TRUE(fit.fitted);
  EXPECT_EQ(fit.source, "loader measurements");
  EXPECT_NEAR(fit.model.a, a, 1e-4);
  EXPECT_NEAR(fit.model.b, b, 1e-3);
  EXPECT_NEAR(fit.model.computeRate, C, 1e-6);
  EXPECT_NEAR(fit.jobRate(4), 2 * C, 1e-6);
}

TEST(ProfileFit, NoUsableBurstMeansNoFitAndMeasuredRecommendation) {
  BurstMeasurement failed;
  failed.workers = 2;
  failed.exitCode = 1;
  std::vector<BurstMeasurement> bursts = {burst(0, 50, 0.9), failed};
  ProfileFit fit = fitProfile(bursts);
  EXPECT_FALSE(fit.fitted);
  EXPECT_EQ(recommendWorkers(candidateRates(fit, bursts), 0.02), 0);
  ProfileResult r = analyseSweep(bursts, 0.02);
  EXPECT_NE(profileTable(r).find("recommended workers: 0"), std::string::npos) << profileTable(r);
  EXPECT_EQ(profileCsv(r),
            "workers,measured_images_per_s,modelled_images_per_s,data_wait_share,warmup_excluded,"
            "exit_status\n0,50.000,,0.9000,0,0\n2,,,,,1\n");
}

// A burst folder as tl-launch leaves it: two slow warm-up steps, then steady ones.
std::string writeBurstFolder(bool withLoader) {
  auto dir = tl::testing::freshDir(withLoader ? "profile_burst_loader" : "profile_burst");
  nlohmann::json s = {{"steps", 6},         {"images_per_s", 40.0},
                      {"wall_time_s", 4.0}, {"logical_workers", 2},
                      {"placement", "1,1"}, {"config", {{"batch", 8}}},
                      {"data_wait_s", 1.0}, {"epochs", nlohmann::json::array()}};
  if (withLoader) {
    s["loader"] = {{"workers", 2}, {"busy_s", 3.0}, {"images", 48}};
    s["compute_s"] = 1.5;
  }
  std::ofstream(dir + "/summary.json") << s.dump();
  std::ofstream metrics(dir + "/metrics.jsonl");
  // Step ends at 1.0, 2.0 (warm-up), then every 0.2 s; data wait grows 0.05 s per steady step.
  double times[] = {1.0, 2.0, 2.2, 2.4, 2.6, 2.8};
  double waits[] = {0.5, 0.9, 0.95, 1.0, 1.05, 1.1};
  for (int i = 0; i < 6; ++i) {
    metrics << nlohmann::json{{"type", "step"},
                              {"step", i + 1},
                              {"epoch", 0},
                              {"data_wait_s", waits[i]},
                              {"time", 1000 + times[i]}}
                   .dump()
            << "\n";
  }
  return dir;
}

TEST(ReadBurst, LeavesTheWarmUpOutOfRateAndWaitShare) {
  auto dir = writeBurstFolder(false);
  BurstMeasurement m = readBurst(dir, 2, 2);
  ASSERT_TRUE(m.ok()) << m.note;
  EXPECT_TRUE(m.warmupExcluded);
  EXPECT_NEAR(m.imagesPerSecond, 4 * 16 / 0.8, 1e-6);  // 4 steps of 2x8 images in 0.8 s
  EXPECT_NEAR(m.waitShare, 0.2 / 0.8, 1e-6);
  EXPECT_FALSE(m.hasLoaderMeasurement);
  EXPECT_DOUBLE_EQ(m.jobPerProcessRatio, 2);

  BurstMeasurement whole = readBurst(dir, 2, 6);  // no step left after the warm-up
  EXPECT_FALSE(whole.warmupExcluded);
  EXPECT_DOUBLE_EQ(whole.imagesPerSecond, 40);
  EXPECT_DOUBLE_EQ(whole.waitShare, 0.25);
}

TEST(ReadBurst, ReadsLoaderMeasurementsOfRankZero) {
  auto dir = writeBurstFolder(true);
  BurstMeasurement m = readBurst(dir, 2, 2);
  ASSERT_TRUE(m.hasLoaderMeasurement);
  EXPECT_EQ(m.loader.workers, 2);
  EXPECT_DOUBLE_EQ(m.loader.busySeconds, 3.0);
  EXPECT_EQ(m.loader.images, 48);
  // The device: the steady window's 0.8 s less 0.2 s of data wait, 4 steps of rank 0's 1 EST.
  EXPECT_NEAR(m.compute.computeSeconds, 0.6, 1e-9);
  EXPECT_EQ(m.compute.images, 4 * 8 * 1);

  BurstMeasurement whole = readBurst(dir, 2, 6);  // no steady window: summary's compute_s
  ASSERT_TRUE(whole.hasLoaderMeasurement);
  EXPECT_DOUBLE_EQ(whole.compute.computeSeconds, 1.5);
  EXPECT_EQ(whole.compute.images, 6 * 8 * 1);
}

// Asked to skip the first epoch, the rate starts where the second epoch begins (warm); a burst
// that never left its first epoch keeps the warm-up window and is not warm.
TEST(ReadBurst, SkipsTheFirstEpochWhenTheBurstGetsPastIt) {
  auto dir = writeBurstFolder(false);
  {
    std::ofstream metrics(dir + "/metrics.jsonl");
    double times[] = {1.0, 2.0, 3.0, 3.5, 3.7, 3.9};  // epoch 0: steps 1-3, epoch 1: 4-6
    for (int i = 0; i < 6; ++i) {
      metrics << nlohmann::json{{"type", "step"},
                                {"step", i + 1},
                                {"epoch", i < 3 ? 0 : 1},
                                {"data_wait_s", 0.0},
                                {"time", 1000 + times[i]}}
                     .dump()
              << "\n";
    }
  }
  BurstMeasurement warm = readBurst(dir, 2, 1, true);
  EXPECT_TRUE(warm.warm);
  EXPECT_EQ(warm.firstEpochSteps, 3);
  EXPECT_NEAR(warm.imagesPerSecond, 3 * 16 / 0.9, 1e-6);  // steps 4-6 after the end of step 3
  BurstMeasurement plain = readBurst(dir, 2, 1);
  EXPECT_FALSE(plain.warm);
  EXPECT_NEAR(plain.imagesPerSecond, 5 * 16 / 2.9, 1e-6);
  BurstMeasurement cold = readBurst(writeBurstFolder(false), 2, 2, true);  // one epoch only
  EXPECT_FALSE(cold.warm);
  EXPECT_NEAR(cold.imagesPerSecond, 4 * 16 / 0.8, 1e-6);
}

TEST(ReadBurst, MissingSummaryIsAFailedBurst) {
  BurstMeasurement m = readBurst(tl::testing::freshDir("profile_burst_empty"), 1, 2);
  EXPECT_FALSE(m.ok());
  EXPECT_NE(m.note.find("summary.json"), std::string::npos);
}

}  // namespace
