// Splitting a node's loader cores among the jobs on it.
//
// Each job's predicted throughput f_j(w) = min(C, w / (a*w + b)) is nondecreasing and concave
// in w for w >= 1 (both pieces are, and so is their minimum), so handing out cores one at a
// time to the job that gains most from its next one maximises sum_j f_j(w_j) exactly. That
// greedy is what the coordinator runs; the exhaustive search is the check for tests and the
// benchmark.
//
// Minimum workers: at least 1. A job at 0 loader workers loads on its training thread, which
// costs no loader core but stalls its compute; its rate 1 / (b + 1/C) is off the concave curve
// (f(0) can exceed f(1) - f(0)), so the greedy could not be exact with it. A job that wants no
// loader threads fixes its pool and does not ask the coordinator.
//
// Budget below the sum of the minimums: every job gets its minimum anyway (the node is then
// oversubscribed; starving a job of its only worker would stop it). Budget above the sum of
// the maximums: every job gets its maximum and the rest stays unused.
//
// Stateless functions: safe from any thread.
#pragma once

#include <functional>
#include <vector>

#include "coordinator/throughput_model.h"

namespace tl::coordinator {

struct JobDemand {
  ThroughputModel model;
  int minWorkers = 1;   // >= 1
  int maxWorkers = 64;  // >= minWorkers
};

// Summed predicted images/s of `workers[j]` loader threads for job j.
double predictedTotal(const std::vector<JobDemand>& jobs, const std::vector<int>& workers);

// The cores each job gets in the optimal split, by greedy marginal gain. Ties go to the job
// with fewer workers, then to the lower index, so the result is deterministic and spreads
// cores evenly among jobs that no longer gain (every job already at its compute rate).
// Hands out min(budget, sum of maximums) cores, or the minimums when the budget is smaller.
// InputError for min < 1, max < min or a negative budget.
std::vector<int> allocateGreedy(const std::vector<JobDemand>& jobs, int budget);

// The same objective by trying every split (for tests and benchmarks; exponential in jobs).
// Among splits of equal predicted total it returns the first in enumerateSplits order.
std::vector<int> bestStaticSplit(const std::vector<JobDemand>& jobs, int budget);

// The budget divided as evenly as the limits allow (the remainder to the lower indices first).
std::vector<int> equalSplit(const std::vector<JobDemand>& jobs, int budget);

// Calls visit(split) for every split that allocateGreedy could return: each job within
// [min, max] and the same total that allocateGreedy hands out. Lexicographic order.
void enumerateSplits(const std::vector<JobDemand>& jobs, int budget,
                     const std::function<void(const std::vector<int>&)>& visit);

}  // namespace tl::coordinator
