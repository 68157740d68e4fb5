// Splitting a node's loader cores AND its dataset-cache memory among the jobs on it, to
// maximise the summed predicted throughput sum_j f_j(w_j, m_j), f_j from cache_model.h.
//
// Cores alone are split greedily (allocator.h: f is concave in w). With memory the objective
// is not separable that way: a job's gain from a core depends on its cache (a job that misses
// more needs more workers) and f is not jointly concave, so the split is found by dynamic
// programming over the jobs on a grid: memory in `units` equal granules (memoryBytes / units),
// cores in whole workers. That is exact on the grid (the exhaustive search, for tests, agrees)
// and costs jobs x cores x units x (the job's core range) x (its unit range).
//
// Cores: as allocateGreedy hands them out (each job within [min, max], min(budget, sum of
// maximums) in total, the minimums when the budget is smaller). Memory: at most `units`
// granules in all, a job never more granules than its data set needs (more would not be used);
// memory no job gains from stays unassigned. Ties go to fewer granules, then fewer cores, for
// the earlier job, so the result is deterministic.
//
// Stateless functions: safe from any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "coordinator/cache_model.h"
#include "coordinator/throughput_model.h"

namespace tl::coordinator {

struct JointDemand {
  ThroughputModel model;
  CacheProfile cache;  // !cache.known(): the job has no cache, it gets no memory
  int minWorkers = 1;
  int maxWorkers = 64;
};

struct JointSplit {
  std::vector<int> workers;
  std::vector<int64_t> cacheBytes;
  double predicted = 0;  // summed predicted images/s
};

struct JointBudget {
  int cores = 0;
  int64_t memoryBytes = 0;
  int units = 32;  // memory granules, 1..4096
};

// Predicted images/s of job j with w workers and m bytes of cache.
double jointPredict(const JointDemand& job, int workers, int64_t cacheBytes);
double jointPredictedTotal(const std::vector<JointDemand>& jobs, const std::vector<int>& workers,
                           const std::vector<int64_t>& cacheBytes);

// The granules job j can use: enough to hold its data set, at most budget.units.
int usefulUnits(const JointDemand& job, const JointBudget& budget);
// The bytes of `units` granules for job j (capped at what its data set takes).
int64_t unitBytes(const JointDemand& job, const JointBudget& budget, int units);

// The optimal split on the grid. InputError for invalid limits, a negative budget or units
// outside 1..4096.
JointSplit allocateJoint(const std::vector<JointDemand>& jobs, const JointBudget& budget);

// The same by trying every split (tests only; exponential in jobs).
JointSplit bestJointSplitExhaustive(const std::vector<JointDemand>& jobs,
                                    const JointBudget& budget);

// Memory in proportion to each job's loader cores (GPU-proportional style), for comparison.
std::vector<int64_t> proportionalMemory(const std::vector<JointDemand>& jobs,
                                        const std::vector<int>& workers,
                                        const JointBudget& budget);

}  // namespace tl::coordinator
