// The memory dimension: the cache model's miss share and shifted per-image time, and the joint
// (cores x cache) allocator against exhaustive search on random small nodes.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "common/check.h"
#include "coordinator/joint_allocator.h"

namespace tl::coordinator {
namespace {

TEST(CacheModel, MissShareIsWhatTheBudgetCannotHold) {
  CacheProfile p{1000, 10, 0.001, 0};
  EXPECT_DOUBLE_EQ(p.missShare(0), 1);
  EXPECT_DOUBLE_EQ(p.missShare(250), 0.75);
  EXPECT_DOUBLE_EQ(p.missShare(1000), 0);
  EXPECT_DOUBLE_EQ(p.missShare(5000), 0);
}

TEST(CacheModel, EachMissAddsItsReadTimeToTheWorkersPerImageTime) {
  // Fitted with everything cached (miss 0): b = 10 ms. A miss reads 100 kB at 10 us/kB = 1 ms.
  ThroughputModel fitted{0.001, 0.010, 500};
  CacheProfile p{1e6, 1e5, 1e-8, 0};
  EXPECT_NEAR(p.atBudget(fitted, 1e6).b, 0.010, 1e-12);
  EXPECT_NEAR(p.atBudget(fitted, 0).b, 0.011, 1e-12);
  EXPECT_NEAR(p.atBudget(fitted, 5e5).b, 0.0105, 1e-12);
  EXPECT_DOUBLE_EQ(p.atBudget(fitted, 0).a, fitted.a);
  EXPECT_DOUBLE_EQ(p.atBudget(fitted, 0).computeRate, fitted.computeRate);
  // 2 workers: 2 / (0.002 + 0.011) images/s with nothing cached.
  EXPECT_NEAR(p.predict(fitted, 2, 0), 2 / 0.013, 1e-9);
  // Fitted at a miss share of 0.5: a full cache removes half a read per image.
  CacheProfile half{1e6, 1e5, 1e-8, 0.5};
  EXPECT_NEAR(half.atBudget(fitted, 1e6).b, 0.0095, 1e-12);
  // No cache information: the model is unchanged.
  EXPECT_DOUBLE_EQ(CacheProfile{}.predict(fitted, 3, 0), fitted.predict(3));
}

JointDemand randomJob(std::mt19937& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  JointDemand job;
  job.model.a = unit(rng) < 0.3 ? 0 : 0.002 * unit(rng);
  job.model.b = 0.001 + 0.01 * unit(rng);
  job.model.computeRate = 100 + 1500 * unit(rng);
  job.minWorkers = 1;
  job.maxWorkers = 1 + int(rng() % 4);
  if (unit(rng) < 0.85) {  // most jobs have a cache; memory-hungry to insensitive
    job.cache.datasetBytes = 1e6 * (0.5 + 3 * unit(rng));
    job.cache.sampleBytes = 1e5 * (0.2 + unit(rng));
    job.cache.storageSecondsPerByte = unit(rng) < 0.3 ? 1e-10 : 2e-7 * unit(rng);
    job.cache.fittedMissShare = unit(rng);
  }
  return job;
}

TEST(JointAllocator, EqualsExhaustiveSearchOnRandomSmallNodes) {
  std::mt19937 rng(18);
  int moved = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<JointDemand> jobs;
    const int count = 2 + int(rng() % 2);
    for (int j = 0; j < count; ++j) jobs.push_back(randomJob(rng));
    JointBudget budget{1 + int(rng() % 7), int64_t(1e6 * (1 + rng() % 4)), 2 + int(rng() % 5)};
    const JointSplit dp = allocateJoint(jobs, budget);
    const JointSplit all = bestJointSplitExhaustive(jobs, budget);
    ASSERT_NEAR(dp.predicted, all.predicted, 1e-9 * all.predicted) << "trial " << trial;
    ASSERT_NEAR(jointPredictedTotal(jobs, dp.workers, dp.cacheBytes), dp.predicted,
                1e-9 * dp.predicted);
    ASSERT_EQ(std::accumulate(dp.workers.begin(), dp.workers.end(), 0),
              std::accumulate(all.workers.begin(), all.workers.end(), 0));
    int64_t used = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      ASSERT_GE(dp.workers[j], jobs[j].minWorkers);
      ASSERT_LE(dp.workers[j], jobs[j].maxWorkers);
      ASSERT_GE(dp.cacheBytes[j], 0);
      ASSERT_LE(double(dp.cacheBytes[j]), std::ceil(jobs[j].cache.datasetBytes));
      if (!jobs[j].cache.known()) {
        ASSERT_EQ(dp.cacheBytes[j], 0);
      }
      used += dp.cacheBytes[j];
    }
    ASSERT_LE(used, budget.memoryBytes) << "trial " << trial;
    // How often the best split beats memory in proportion to the cores (which is off the
    // grid, so it may come out a hair above the grid's best).
    const double proportional =
        jointPredictedTotal(jobs, dp.workers, proportionalMemory(jobs, dp.workers, budget));
    moved += proportional < dp.predicted * 0.99;
  }
  EXPECT_GT(moved, 20) << "random nodes where splitting memory by sensitivity gains over 1%";
}

TEST(JointAllocator, MemoryGoesToTheJobThatReadsSlowly) {
  // Two jobs alike but for storage speed: 1 ms vs 0.01 ms per sample read; memory for one
  // data set only. The slow reader gets it all; cached, its worker takes 3 ms an image
  // instead of 4, so it also gets every core above the fast one's minimum.
  JointDemand slow{{0, 0.004, 1e9}, {1e6, 1e4, 1e-7, 1}, 1, 4};
  JointDemand fast{{0, 0.004, 1e9}, {1e6, 1e4, 1e-9, 1}, 1, 4};
  const JointSplit split = allocateJoint({fast, slow}, {4, 1000000, 8});
  EXPECT_EQ(split.cacheBytes[1], 1000000);
  EXPECT_EQ(split.cacheBytes[0], 0);
  EXPECT_EQ(split.workers, (std::vector<int>{1, 3}));
  EXPECT_NEAR(split.predicted, 1 / 0.004 + 3 / 0.003, 1e-6);
}

TEST(JointAllocator, MemoryNoJobGainsFromStaysUnassigned) {
  // Compute-bound at every cache size: no memory is handed out.
  JointDemand bound{{0, 0.001, 10}, {1e6, 1e4, 1e-7, 1}, 1, 2};
  const JointSplit split = allocateJoint({bound, bound}, {2, 2000000, 4});
  EXPECT_EQ(split.cacheBytes, (std::vector<int64_t>{0, 0}));
}

TEST(JointAllocator, RefusesBadBudgets) {
  JointDemand job{{0, 0.004, 1e9}, {1e6, 1e4, 1e-7, 1}, 1, 4};
  EXPECT_THROW(allocateJoint({job}, {-1, 0, 4}), InputError);
  EXPECT_THROW(allocateJoint({job}, {1, -5, 4}), InputError);
  EXPECT_THROW(allocateJoint({job}, {1, 5, 0}), InputError);
  job.minWorkers = 0;
  EXPECT_THROW(allocateJoint({job}, {1, 5, 4}), InputError);
}

}  // namespace
}  // namespace tl::coordinator
