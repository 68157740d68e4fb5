// BurstTracker: the three figures of a resource from a signal whose bursts are known.
#include <gtest/gtest.h>

#include "runtime/usage/burst_tracker.h"

namespace {

using tl::usage::BurstTracker;

TEST(BurstTracker, SquareWaveGivesItsPeriodsAndLevel) {
  // 5 periods of 0.3 s busy at 0.8, then 0.2 s idle at 0.05 (below the 0.2 threshold).
  BurstTracker t(0.2);
  double at = 0;
  for (int i = 0; i < 5; ++i) {
    t.add(at, at + 0.3, 0.8);
    t.add(at + 0.3, at + 0.5, 0.05);
    at += 0.5;
  }
  const auto f = t.figures();
  EXPECT_EQ(f.bursts, 5);
  EXPECT_EQ(f.idlePeriods, 5);
  EXPECT_NEAR(f.burstSeconds, 0.3, 1e-9);
  EXPECT_NEAR(f.idleSeconds, 0.2, 1e-9);
  EXPECT_NEAR(f.burstConsumption, 0.8, 1e-9);
  EXPECT_NEAR(f.spanSeconds, 2.5, 1e-9);
}

TEST(BurstTracker, ConsumptionIsTimeWeightedOverTheBurstOnly) {
  BurstTracker t(0);
  t.add(0, 1, 0);      // leading idle
  t.add(1, 2, 10);     // one burst: 1 s at 10, 3 s at 2
  t.add(2, 5, 2);
  t.add(5, 7, 0);      // trailing idle
  const auto f = t.figures();
  EXPECT_EQ(f.bursts, 1);
  EXPECT_NEAR(f.burstSeconds, 4, 1e-9);
  EXPECT_NEAR(f.burstConsumption, (10 * 1 + 2 * 3) / 4.0, 1e-9);
  EXPECT_EQ(f.idlePeriods, 2);
  EXPECT_NEAR(f.idleSeconds, 1.5, 1e-9);
}

TEST(BurstTracker, GapsBetweenIntervalsAreIdleAndShortGapsJoinBursts) {
  // Events as the traffic log gives them: calls with gaps; gaps under 1 ms join.
  BurstTracker t(0, 1e-3);
  t.add(0, 0, 0);            // anchor the span at 0
  t.add(1.0, 1.1, 5);
  t.add(1.1005, 1.2, 5);     // 0.5 ms gap: same burst
  t.add(2.0, 2.2, 5);        // 0.8 s gap: a new burst
  t.add(3.0, 3.0, 0);        // extend the span to 3 s
  const auto f = t.figures();
  EXPECT_EQ(f.bursts, 2);
  EXPECT_NEAR(f.burstSeconds, (0.2 + 0.2) / 2, 1e-9);
  EXPECT_EQ(f.idlePeriods, 3);  // [0,1), [1.2,2), [2.2,3)
  EXPECT_NEAR(f.idleSeconds, (1.0 + 0.8 + 0.8) / 3, 1e-9);
  EXPECT_NEAR(f.spanSeconds, 3.0, 1e-9);
}

TEST(BurstTracker, FiguresDoNotDisturbLaterAdds) {
  BurstTracker t(0);
  t.add(0, 1, 1);
  EXPECT_EQ(t.figures().bursts, 1);
  t.add(1, 2, 1);  // continues the same burst
  EXPECT_EQ(t.figures().bursts, 1);
  EXPECT_NEAR(t.figures().burstSeconds, 2, 1e-9);
}

TEST(BurstTracker, AllIdleHasNoBurstAndRejectsReversedIntervals) {
  BurstTracker t(0.5);
  t.add(0, 2, 0.1);
  EXPECT_EQ(t.figures().bursts, 0);
  EXPECT_EQ(t.figures().burstConsumption, 0);
  EXPECT_NEAR(t.figures().idleSeconds, 2, 1e-9);
  EXPECT_THROW(t.add(3, 2, 1), std::exception);
}

}  // namespace
