// The placement planner against exhaustive search: many seeded random small cases, memory limits
// that bind, and inputs it must refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>

#include "common/check.h"
#include "elastic/placement/placement_planner.h"

namespace tl::elastic {
namespace {

// The least makespan over every composition of n into the processes within [lo, cap].
double exhaustiveBest(const std::vector<ProcessSpeed>& ps, int n, int lo) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> counts(ps.size(), 0);
  std::function<void(size_t, int)> walk = [&](size_t g, int left) {
    if (g == ps.size()) {
      if (left == 0) best = std::min(best, predictedStepSeconds(counts, ps));
      return;
    }
    const int cap = int(std::min<int64_t>(estCapacity(ps[g]), n));
    for (int k = lo; k <= std::min(cap, left); ++k) {
      counts[g] = k;
      walk(g + 1, left - k);
    }
  };
  walk(0, n);
  return best;
}

TEST(PlacementPlanner, MatchesExhaustiveSearchOnRandomCases) {
  std::mt19937_64 rng(12);
  int checked = 0, bound = 0, infeasible = 0;
  for (int c = 0; c < 3000; ++c) {
    const int p = 1 + int(rng() % 4);
    const int n = 1 + int(rng() % 12);
    const int lo = int(rng() % 2);
    std::vector<ProcessSpeed> ps(static_cast<size_t>(p));
    for (auto& s : ps) {
      // Speeds drawn from a few values so that ties between candidates happen, plus random ones.
      s.secondsPerEst = rng() % 3 == 0 ? 0.25 * double(1 + rng() % 4) : 0.01 + double(rng() % 1000) / 997.0;
      s.bytesPerEst = double(1 + rng() % 5) * 1e6;
      s.memoryLimitBytes = rng() % 2 ? double(rng() % 12) * 1e6 : 0;
    }
    const double best = exhaustiveBest(ps, n, lo);
    if (!std::isfinite(best)) {
      EXPECT_THROW(planPlacement(ps, n, lo), InputError) << "case " << c;
      ++infeasible;
      continue;
    }
    const PlacementPlan plan = planPlacement(ps, n, lo);
    ASSERT_EQ(plan.counts.size(), size_t(p));
    int sum = 0;
    for (size_t g = 0; g < ps.size(); ++g) {
      EXPECT_GE(plan.counts[g], lo);
      EXPECT_LE(plan.counts[g], estCapacity(ps[g])) << "case " << c << " process " << g;
      if (estCapacity(ps[g]) < n) ++bound;
      sum += plan.counts[g];
    }
    EXPECT_EQ(sum, n) << "case " << c;
    EXPECT_EQ(plan.stepSeconds, best) << "case " << c;
    EXPECT_EQ(plan.stepSeconds, predictedStepSeconds(plan.counts, ps));
    EXPECT_LE(plan.idealStepSeconds, plan.stepSeconds * (1 + 1e-12));
    EXPECT_EQ(planPlacement(ps, n, lo).counts, plan.counts) << "deterministic";
    ++checked;
  }
  // The generator must exercise every branch: feasible, memory-bound and infeasible cases.
  EXPECT_GT(checked, 1500);
  EXPECT_GT(bound, 500);
  EXPECT_GT(infeasible, 100);
}

// Among the placements of least makespan (or within the slack of it), the fewest ESTs moved
// away from the current one.
TEST(PlacementPlanner, MovesTheFewestEstsAmongTheBestPlacements) {
  std::mt19937_64 rng(21);
  int checked = 0, ties = 0;
  for (int c = 0; c < 2000; ++c) {
    const int p = 2 + int(rng() % 3);
    const int n = p + int(rng() % 9);
    std::vector<ProcessSpeed> ps(static_cast<size_t>(p));
    for (auto& s : ps) {
      s.secondsPerEst = 0.5 * double(1 + rng() % 4);  // few values: many placements tie
      s.memoryLimitBytes = rng() % 3 == 0 ? double(2 + rng() % 6) * 1e6 : 0;
      s.bytesPerEst = 1e6;
    }
    std::vector<int> current(static_cast<size_t>(p), 1);
    for (int left = n - p; left > 0; --left) ++current[rng() % current.size()];
    const double best = exhaustiveBest(ps, n, 1);
    if (!std::isfinite(best)) continue;
    const double slack = c % 2 ? 0.0 : 0.05 * double(rng() % 8);  // half the cases: up to 35 %
    int fewest = n + 1, optimal = 0;
    std::vector<int> counts(ps.size(), 0);
    std::function<void(size_t, int)> walk = [&](size_t g, int left) {
      if (g == ps.size()) {
        if (left == 0 && predictedStepSeconds(counts, ps) <= best * (1 + slack)) {
          fewest = std::min(fewest, estsMoved(current, counts));
          ++optimal;
        }
        return;
      }
      for (int k = 1; k <= std::min<int>(int(std::min<int64_t>(estCapacity(ps[g]), n)), left); ++k) {
        counts[g] = k;
        walk(g + 1, left - k);
      }
    };
    walk(0, n);
    const PlacementPlan plan = planPlacement(ps, n, 1, current, slack);
    if (slack == 0) {
      EXPECT_EQ(plan.stepSeconds, best) << "case " << c;
    }
    EXPECT_LE(plan.stepSeconds, best * (1 + slack)) << "case " << c;
    EXPECT_EQ(estsMoved(current, plan.counts), fewest) << "case " << c;
    if (optimal > 1) ++ties;
    ++checked;
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(ties, 300);
}

TEST(PlacementPlanner, ReplanMovesOneEstWhereOneIsEnough) {
  // 4,4,2 at 1 : 1 : 0.5, then process 0 slows down 2x: 3,5,2 and 2,6,2 both finish in 6 units;
  // the first moves one EST, the second two.
  std::vector<ProcessSpeed> ps{{2.0}, {1.0}, {2.0}};
  const PlacementPlan plan = planPlacement(ps, 10, 1, {4, 4, 2});
  EXPECT_EQ(plan.counts, (std::vector<int>{3, 5, 2}));
  EXPECT_DOUBLE_EQ(plan.stepSeconds, 6.0);
  EXPECT_EQ(estsMoved({4, 4, 2}, plan.counts), 1);
  EXPECT_THROW(planPlacement(ps, 10, 1, {4, 4, 2, 0}), InputError);
  // Measured with noise (2.02, 1, 1.98): 2,5,3 (5.94 units, two ESTs moved) beats 3,5,2 (6.06,
  // one moved) by 2 %, which a 3 % slack treats as noise.
  std::vector<ProcessSpeed> noisy{{2.02}, {1.0}, {1.98}};
  EXPECT_EQ(planPlacement(noisy, 10, 1, {4, 4, 2}).counts, (std::vector<int>{2, 5, 3}));
  EXPECT_EQ(planPlacement(noisy, 10, 1, {4, 4, 2}, 0.03).counts, (std::vector<int>{3, 5, 2}));
  EXPECT_THROW(planPlacement(noisy, 10, 1, {4, 4, 2}, -0.1), InputError);
}

TEST(PlacementPlanner, SpeedsOneOneHalfOnTenEsts) {
  // 1 : 1 : 0.5 (the slow process takes twice as long per EST): 4,4,2 finishes in 4 units.
  std::vector<ProcessSpeed> ps{{1.0}, {1.0}, {2.0}};
  const PlacementPlan plan = planPlacement(ps, 10);
  EXPECT_EQ(plan.counts, (std::vector<int>{4, 4, 2}));
  EXPECT_DOUBLE_EQ(plan.stepSeconds, 4.0);
  EXPECT_DOUBLE_EQ(plan.idealStepSeconds, 4.0);
  EXPECT_DOUBLE_EQ(predictedStepSeconds({4, 3, 3}, ps), 6.0);  // even placement
}

TEST(PlacementPlanner, MemoryLimitMovesEstsElsewhere) {
  // The fast process could take 8 but has room for 3.
  std::vector<ProcessSpeed> ps{{1.0, 2e6, 6e6}, {4.0, 2e6, 0}};
  const PlacementPlan plan = planPlacement(ps, 5);
  EXPECT_EQ(plan.counts, (std::vector<int>{3, 2}));
  EXPECT_DOUBLE_EQ(plan.stepSeconds, 8.0);
}

TEST(PlacementPlanner, RefusesWhatCannotBePlanned) {
  auto message = [](const std::vector<ProcessSpeed>& ps, int n, int lo) {
    try {
      planPlacement(ps, n, lo);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{1.0, 1e6, 2e6}, {1.0, 1e6, 2e6}}, 5, 1).find("memory holds 4 logical workers but the job has 5"),
            std::string::npos);
  EXPECT_NE(message({{1.0}, {0.0}}, 4, 1).find("process 1: seconds per EST must be finite and > 0"), std::string::npos);
  EXPECT_NE(message({{1.0}, {std::nan("")}}, 4, 1).find("process 1"), std::string::npos);
  EXPECT_NE(message({{1.0}, {1.0}, {1.0}}, 2, 1).find("3 processes need at least 3"), std::string::npos);
  EXPECT_NE(message({{1.0, 3e6, 2e6}, {1.0}}, 4, 1).find("process 0 has room for 0"), std::string::npos);
  EXPECT_NE(message({}, 4, 1).find("no processes"), std::string::npos);
}

}  // namespace
}  // namespace tl::elastic
