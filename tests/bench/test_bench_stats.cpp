// The statistics benchmarks report with: the median's order-statistics confidence interval and
// the alternating order of configurations within rounds.
#include <gtest/gtest.h>

#include <random>

#include "bench/bench_stats.h"

namespace tl::bench {
namespace {

TEST(MedianWithCi, OddAndEvenCountsGiveTheMiddle) {
  EXPECT_DOUBLE_EQ(medianWithCi({3, 1, 2}).median, 2);
  EXPECT_DOUBLE_EQ(medianWithCi({4, 1, 3, 2}).median, 2.5);
  EXPECT_EQ(medianWithCi({}).samples, 0u);
}

// With 10 samples, [x(2), x(9)] covers the median with 1 - 2 P(B <= 1) = 97.9 %; [x(3), x(8)]
// would give only 89 %, below 95 %.
TEST(MedianWithCi, TakesTheNarrowestOrderStatisticsThatReachTheLevel) {
  const MedianCi m = medianWithCi({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(m.low, 2);
  EXPECT_DOUBLE_EQ(m.high, 9);
  EXPECT_NEAR(m.confidence, 1 - 2 * 11.0 / 1024, 1e-12);
}

TEST(MedianWithCi, TooFewSamplesSpanEverythingAndSaySo) {
  const MedianCi m = medianWithCi({5, 1, 3, 4, 2});
  EXPECT_DOUBLE_EQ(m.low, 1);
  EXPECT_DOUBLE_EQ(m.high, 5);
  EXPECT_NEAR(m.confidence, 1 - 2.0 / 32, 1e-12);
}

// The promise itself: over many draws the interval holds the true median at least 95 % of the
// time, and narrows as samples grow.
TEST(MedianWithCi, CoversTheTrueMedianAtLeastAsOftenAsPromised) {
  std::mt19937 random(11);
  std::exponential_distribution<double> draw(1.0);  // skewed; true median ln 2
  const double trueMedian = std::log(2.0);
  int covered = 0;
  const int trials = 2000;
  double width15 = 0, width61 = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> v(15), w(61);
    for (double& x : v) x = draw(random);
    for (double& x : w) x = draw(random);
    const MedianCi m = medianWithCi(v);
    covered += m.low <= trueMedian && trueMedian <= m.high;
    width15 += m.high - m.low;
    const MedianCi n = medianWithCi(w);
    width61 += n.high - n.low;
  }
  EXPECT_GE(covered, int(0.95 * trials) - 20);  // 2000 trials: allow sampling noise
  EXPECT_LT(width61, 0.7 * width15);
}

TEST(RoundOrder, AlternatesForwardAndBackward) {
  EXPECT_EQ(roundOrder(3, 0), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(roundOrder(3, 1), (std::vector<size_t>{2, 1, 0}));
  EXPECT_EQ(roundOrder(3, 2), (std::vector<size_t>{0, 1, 2}));
}

TEST(FormatCi, PrintsMedianAndBoundsAndPercentOfARatio) {
  MedianCi m;
  m.median = 1.0123;
  m.low = 1.001;
  m.high = 1.02;
  EXPECT_EQ(formatCi(m, "%.3f"), "1.012 [1.001, 1.020]");
  EXPECT_EQ(formatPercentCi(m), "+1.23 % [+0.10, +2.00]");
}

}  // namespace
}  // namespace tl::bench
