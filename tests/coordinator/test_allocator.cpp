// The allocator: the greedy split equals exhaustive search on many random small cases, and
// the documented edge cases (budget below the minimums, above the maximums, bad limits).
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "common/check.h"
#include "coordinator/allocator.h"

namespace tl::coordinator {
namespace {

int total(const std::vector<int>& split) { return std::accumulate(split.begin(), split.end(), 0); }

JobDemand randomJob(std::mt19937& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  JobDemand job;
  job.model.a = unit(rng) < 0.2 ? 0 : 0.004 * unit(rng);
  job.model.b = 0.001 + 0.02 * unit(rng);
  job.model.computeRate =
      unit(rng) < 0.2 ? std::numeric_limits<double>::infinity() : 50 + 1000 * unit(rng);
  job.minWorkers = 1 + int(rng() % 2);
  job.maxWorkers = job.minWorkers + int(rng() % 6);
  return job;
}

TEST(Allocator, GreedyEqualsExhaustiveOnRandomCases) {
  std::mt19937 rng(2024);
  int cases = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<JobDemand> jobs;
    int count = 2 + int(rng() % 3);
    for (int j = 0; j < count; ++j) jobs.push_back(randomJob(rng));
    int budget = 1 + int(rng() % 10);
    std::vector<int> greedy = allocateGreedy(jobs, budget);
    std::vector<int> best = bestStaticSplit(jobs, budget);
    ASSERT_EQ(total(greedy), total(best));
    double g = predictedTotal(jobs, greedy), b = predictedTotal(jobs, best);
    ASSERT_NEAR(g, b, 1e-9 * b) << "trial " << trial << " budget " << budget;
    for (size_t j = 0; j < jobs.size(); ++j) {
      ASSERT_GE(greedy[j], jobs[j].minWorkers);
      ASSERT_LE(greedy[j], jobs[j].maxWorkers);
    }
    ++cases;
  }
  EXPECT_EQ(cases, 3000);
}

TEST(Allocator, CoresGoWhereTheyGainMost) {
  // Job 0 saturates its device at one worker; job 1 scales until 4 workers.
  std::vector<JobDemand> jobs{{{0, 0.01, 50}, 1, 8}, {{0, 0.01, 400}, 1, 8}};
  EXPECT_EQ(allocateGreedy(jobs, 5), (std::vector<int>{1, 4}));
  EXPECT_EQ(bestStaticSplit(jobs, 5), (std::vector<int>{1, 4}));
  EXPECT_EQ(equalSplit(jobs, 5), (std::vector<int>{3, 2}));
}

TEST(Allocator, TiesSpreadEvenlyAndDeterministically) {
  // Both jobs saturated from one worker on: no gain anywhere, so spread the cores evenly.
  std::vector<JobDemand> jobs{
      {{0, 0.001, 10}, 1, 8}, {{0, 0.001, 10}, 1, 8}, {{0, 0.001, 10}, 1, 8}};
  EXPECT_EQ(allocateGreedy(jobs, 7), (std::vector<int>{3, 2, 2}));
}

TEST(Allocator, BudgetBelowMinimumsGivesEveryJobItsMinimum) {
  std::vector<JobDemand> jobs{{{0, 0.01, 100}, 2, 4}, {{0, 0.01, 100}, 1, 4}};
  EXPECT_EQ(allocateGreedy(jobs, 1), (std::vector<int>{2, 1}));
  EXPECT_EQ(equalSplit(jobs, 0), (std::vector<int>{2, 1}));
  EXPECT_EQ(bestStaticSplit(jobs, 2), (std::vector<int>{2, 1}));
}

TEST(Allocator, BudgetAboveMaximumsStopsAtTheMaximums) {
  std::vector<JobDemand> jobs{{{0, 0.01, 1e9}, 1, 2}, {{0, 0.01, 1e9}, 1, 3}};
  EXPECT_EQ(allocateGreedy(jobs, 50), (std::vector<int>{2, 3}));
  EXPECT_EQ(equalSplit(jobs, 50), (std::vector<int>{2, 3}));
}

TEST(Allocator, EnumeratesEverySplitOnce) {
  std::vector<JobDemand> jobs{{{}, 1, 3}, {{}, 1, 3}, {{}, 2, 2}};
  std::vector<std::vector<int>> splits;
  enumerateSplits(jobs, 6, [&](const std::vector<int>& s) { splits.push_back(s); });
  std::vector<std::vector<int>> expected{{1, 3, 2}, {2, 2, 2}, {3, 1, 2}};
  EXPECT_EQ(splits, expected);
}

TEST(Allocator, RejectsBadLimits) {
  EXPECT_THROW(allocateGreedy({{{}, 0, 2}}, 2), InputError);
  EXPECT_THROW(allocateGreedy({{{}, 3, 2}}, 2), InputError);
  EXPECT_THROW(allocateGreedy({{{}, 1, 2}}, -1), InputError);
  EXPECT_TRUE(allocateGreedy({}, 4).empty());
}

}  // namespace
}  // namespace tl::coordinator
