// --placement auto's hysteresis (elastic/placement/replan_policy.h) on scripted measurements:
// a new layout's first step is not measured, decisions come once per window, a move needs the
// minimum gain, two windows that agree, and the hold after the last move.
#include <gtest/gtest.h>

#include "elastic/placement/replan_policy.h"

namespace tl::elastic {
namespace {

AutoPlacementOptions options(int64_t window, double minGain, int64_t hold) {
  AutoPlacementOptions o;
  o.enabled = true;
  o.window = window;
  o.minGain = minGain;
  o.holdSteps = hold;
  return o;
}

// Drives a policy step by step on a job of `logicalWorkers` ESTs, moving when it says so.
struct Script {
  ReplanPolicy policy;
  std::vector<int> counts;
  int logicalWorkers;
  int64_t totalSteps = 1000;
  int64_t step = 0;

  // One step measured at `seconds` per EST on each rank; the decision's text, or "" when none.
  std::string measure(std::vector<double> seconds, bool busy = false) {
    ++step;
    StepMeasurement m{seconds, std::vector<double>(seconds.size(), 1e6)};
    auto d = policy.measured({step, counts, logicalWorkers, totalSteps, busy}, m);
    if (!d) return "";
    if (d->move) {
      counts = *d->move;
      policy.moved(step);
    }
    return d->record.at("decision").get<std::string>();
  }
};

TEST(ReplanPolicy, ASlowProcessLosesEstsAfterTwoAgreeingWindows) {
  Script s{ReplanPolicy(options(2, 0.1, 6)), {2, 2}, 4};
  const std::vector<double> slowRank1 = {0.01, 0.02};
  EXPECT_EQ(s.measure(slowRank1), "");  // the layout's first step: not measured
  EXPECT_EQ(s.measure(slowRank1), "");  // window of 2: one sample so far
  EXPECT_EQ(s.measure(slowRank1).rfind("confirm", 0), 0u);
  EXPECT_EQ(s.measure(slowRank1), "");
  EXPECT_EQ(s.measure(slowRank1), "move");
  EXPECT_EQ(s.counts, (std::vector<int>{3, 1}));
}

TEST(ReplanPolicy, MovesWaitForTheHoldAfterTheLastMove) {
  Script s{ReplanPolicy(options(2, 0.1, 6)), {2, 2}, 4};
  for (int i = 0; i < 5; ++i) s.measure({0.01, 0.02});
  ASSERT_EQ(s.counts, (std::vector<int>{3, 1}));  // moved after step 5
  // Now both are as fast: {3,1} should go back to {2,2}, but not before step 5 + 6.
  const std::vector<double> even = {0.01, 0.01};
  EXPECT_EQ(s.measure(even), "");  // step 6: the new layout's first
  EXPECT_EQ(s.measure(even), "");
  EXPECT_EQ(s.measure(even), "hold: the last move was at step 5, --replan-hold 6");  // step 8
  EXPECT_EQ(s.measure(even), "");
  EXPECT_EQ(s.measure(even).rfind("hold", 0), 0u);  // step 10
  EXPECT_EQ(s.measure(even), "");
  EXPECT_EQ(s.measure(even).rfind("confirm", 0), 0u);  // step 12: the hold is over
  EXPECT_EQ(s.measure(even), "");
  EXPECT_EQ(s.measure(even), "move");
  EXPECT_EQ(s.counts, (std::vector<int>{2, 2}));
}

TEST(ReplanPolicy, ATransientWindowDoesNotMoveAnything) {
  Script s{ReplanPolicy(options(2, 0.1, 0)), {2, 2}, 4};
  s.measure({0.01, 0.02});
  s.measure({0.01, 0.02});
  EXPECT_EQ(s.measure({0.01, 0.02}).rfind("confirm", 0), 0u);
  s.measure({0.01, 0.01});
  EXPECT_EQ(s.measure({0.01, 0.01}), "keep: the placement is the plan");  // the slowness went away
  s.measure({0.01, 0.02});
  EXPECT_EQ(s.measure({0.01, 0.02}).rfind("confirm", 0), 0u);  // confirms anew, does not move
  EXPECT_EQ(s.counts, (std::vector<int>{2, 2}));
}

TEST(ReplanPolicy, AGainBelowTheMinimumKeepsThePlacement) {
  // 20 ESTs on {10,10}, rank 1 20 % slower: {11,9} would gain 9 %.
  Script s{ReplanPolicy(options(1, 0.1, 0)), {10, 10}, 20};
  s.measure({0.010, 0.012});
  EXPECT_EQ(s.measure({0.010, 0.012}), "keep: predicted gain 9 % is below --replan-min-gain 10 %");
  Script lower{ReplanPolicy(options(1, 0.05, 0)), {10, 10}, 20};
  lower.measure({0.010, 0.012});
  EXPECT_EQ(lower.measure({0.010, 0.012}).rfind("confirm", 0), 0u);  // 9 % is enough at 5 %
  EXPECT_EQ(lower.measure({0.010, 0.012}), "move");
  EXPECT_EQ(lower.counts, (std::vector<int>{11, 9}));
}

TEST(ReplanPolicy, NoDecisionWhileBusyNearTheEndOrWithoutAMeasurement) {
  Script busy{ReplanPolicy(options(1, 0.1, 0)), {2, 2}, 4};
  busy.measure({0.01, 0.02});
  EXPECT_EQ(busy.measure({0.01, 0.02}, /*busy=*/true), "");
  EXPECT_EQ(busy.measure({0.01, 0.02}).rfind("confirm", 0), 0u);

  Script late{ReplanPolicy(options(1, 0.1, 0)), {2, 2}, 4};
  late.totalSteps = 4;
  late.measure({0.01, 0.02});
  EXPECT_EQ(late.measure({0.01, 0.02}).rfind("confirm", 0), 0u);  // after step 2 of 4
  EXPECT_EQ(late.measure({0.01, 0.02}), "");                      // after step 3: too late to gain

  Script idle{ReplanPolicy(options(1, 0.1, 0)), {3, 1}, 4};
  idle.measure({0.01, 0.0});
  EXPECT_EQ(idle.measure({0.01, 0.0}), "keep: a process has no measurement (it holds no EST)");
}

TEST(ReplanPolicy, AWindowUsesTheMedianSoOneOutlierStepDoesNotCount) {
  Script s{ReplanPolicy(options(3, 0.1, 0)), {2, 2}, 4};
  s.measure({0.01, 0.01});
  s.measure({0.01, 0.01});
  s.measure({0.01, 0.50});  // one step where rank 1 stalled
  EXPECT_EQ(s.measure({0.01, 0.01}), "keep: the placement is the plan");
}

}  // namespace
}  // namespace tl::elastic
