// The throughput model and its fit: predictions, recovery of known (a, b, C) from clean and
// noisy windows, clamping, and forgetting that follows a job whose cost changes.
#include <gtest/gtest.h>

#include <random>

#include "coordinator/throughput_model.h"
#include "tests/coordinator/coordinator_test_util.h"

namespace tl::coordinator {
namespace {

using test_util::syntheticWindow;

void addWindow(ThroughputFitter& fitter, const ReportMessage& window) {
  fitter.addLoader(window.loader);
  fitter.addCompute(window.compute);
}

TEST(ThroughputModel, PredictsMinOfComputeAndLoader) {
  ThroughputModel m{0.001, 0.004, 500};
  EXPECT_DOUBLE_EQ(m.loaderRate(0), 0);
  EXPECT_DOUBLE_EQ(m.loaderRate(1), 1 / 0.005);
  EXPECT_DOUBLE_EQ(m.loaderRate(4), 4 / 0.008);
  EXPECT_DOUBLE_EQ(m.predict(1), 200);
  EXPECT_DOUBLE_EQ(m.predict(4), 500);  // capped by the device
  // No workers: the training thread loads (b per image) and computes (1/C) in turn.
  EXPECT_DOUBLE_EQ(m.predict(0), 1 / (0.004 + 1.0 / 500));
  ThroughputModel unlimited{0, 0.01};
  EXPECT_DOUBLE_EQ(unlimited.predict(3), 300);
}

TEST(ThroughputFitter, RecoversExactModel) {
  ThroughputModel truth{0.002, 0.010, 350};
  ThroughputFitter fitter;
  EXPECT_FALSE(fitter.ready());
  for (int w : {1, 2, 3, 5}) addWindow(fitter, syntheticWindow(truth, w, 1.0));
  ASSERT_TRUE(fitter.ready());
  EXPECT_EQ(fitter.distinctWorkerCounts(), 4);
  ThroughputModel m = fitter.fit();
  EXPECT_NEAR(m.a, truth.a, 1e-9);
  EXPECT_NEAR(m.b, truth.b, 1e-9);
  EXPECT_NEAR(m.computeRate, truth.computeRate, 1e-6);
}

TEST(ThroughputFitter, OneSizeGivesMeanTimeAndNoContention) {
  ThroughputModel truth{0.002, 0.010, 1000};
  ThroughputFitter fitter;
  addWindow(fitter, syntheticWindow(truth, 2, 1.0));
  addWindow(fitter, syntheticWindow(truth, 2, 2.0));
  ThroughputModel m = fitter.fit();
  EXPECT_EQ(m.a, 0);
  EXPECT_NEAR(m.b, 0.014, 1e-12);  // t(2) = 2a + b
}

TEST(ThroughputFitter, RecoversModelFromNoisyWindows) {
  ThroughputModel truth{0.0015, 0.006, 400};
  std::mt19937 rng(7);
  ThroughputFitter fitter;
  for (int round = 0; round < 40; ++round) {
    for (int w = 1; w <= 4; ++w) addWindow(fitter, syntheticWindow(truth, w, 1.0, &rng, 0.05));
  }
  ThroughputModel m = fitter.fit();
  EXPECT_NEAR(m.a, truth.a, 0.15 * truth.a);
  EXPECT_NEAR(m.b, truth.b, 0.10 * truth.b);
  EXPECT_NEAR(m.computeRate, truth.computeRate, 1e-6);
  for (int w = 1; w <= 8; ++w) EXPECT_NEAR(m.predict(w), truth.predict(w), 0.05 * truth.predict(w));
}

TEST(ThroughputFitter, ClampsNegativeSlopeAndTinyIntercept) {
  ThroughputFitter falling;  // per-image time falls with more workers: noise, not physics
  falling.addLoader({1, 0.010 * 100, 100});
  falling.addLoader({3, 0.009 * 300, 300});
  ThroughputModel m = falling.fit();
  EXPECT_EQ(m.a, 0);
  EXPECT_GT(m.b, 0);
  EXPECT_NEAR(m.b, (0.010 * 100 + 0.009 * 300) / 400, 1e-12);  // image-weighted mean

  ThroughputFitter steep;  // t(w) = 0.01 w - 0.005 would need b < 0
  steep.addLoader({1, 0.005 * 100, 100});
  steep.addLoader({2, 0.015 * 100, 100});
  m = steep.fit();
  EXPECT_GT(m.b, 0);
  EXPECT_GT(m.a, 0);
  EXPECT_TRUE(std::isinf(m.computeRate));  // no compute window yet
}

TEST(ThroughputFitter, IgnoresEmptyWindows) {
  ThroughputFitter fitter;
  fitter.addLoader({2, 1.0, 0});
  fitter.addCompute({1.0, 0});
  EXPECT_FALSE(fitter.ready());
  EXPECT_EQ(fitter.distinctWorkerCounts(), 0);
}

TEST(ThroughputFitter, ShiftMovesTheLevelAndKeepsTheSlope) {
  ThroughputFitter fitter;
  for (int w : {1, 2, 4}) fitter.addLoader({w, (0.001 * w + 0.004) * 100, 100});
  fitter.shiftSecondsPerImage(0.002);
  EXPECT_NEAR(fitter.fit().a, 0.001, 1e-12);
  EXPECT_NEAR(fitter.fit().b, 0.006, 1e-12);
  fitter.shiftSecondsPerImage(-1);  // never to zero or below
  EXPECT_GT(fitter.fit().b, 0);
  EXPECT_GE(fitter.fit().a, 0);
}

TEST(ThroughputFitter, ForgettingFollowsAChange) {
  ThroughputModel before{0.001, 0.004, 800}, after{0.003, 0.012, 300};
  ThroughputFitter forgetful(0.7), everything(1.0);
  for (int round = 0; round < 30; ++round) {
    for (int w : {1, 2, 3}) {
      addWindow(forgetful, syntheticWindow(before, w, 1.0));
      addWindow(everything, syntheticWindow(before, w, 1.0));
    }
  }
  for (int round = 0; round < 8; ++round) {  // the job changed: images got 3x costlier
    for (int w : {1, 2, 3}) {
      addWindow(forgetful, syntheticWindow(after, w, 1.0));
      addWindow(everything, syntheticWindow(after, w, 1.0));
    }
  }
  ThroughputModel m = forgetful.fit();
  EXPECT_NEAR(m.a, after.a, 0.02 * after.a);
  EXPECT_NEAR(m.b, after.b, 0.02 * after.b);
  EXPECT_NEAR(m.computeRate, after.computeRate, 0.02 * after.computeRate);
  // Without forgetting the old behaviour still dominates.
  EXPECT_LT(everything.fit().b, 0.7 * after.b);
}

}  // namespace
}  // namespace tl::coordinator
