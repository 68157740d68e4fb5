// What the goodput-style policies (goodput_policy.cpp, hetero_goodput_policy.cpp) share: the
// speedup's denominator c_i, and the greedy step that grows one job. Internal to tl_sched.
#pragma once

#include <algorithm>
#include <queue>
#include <limits>
#include <tuple>
#include <vector>

#include "tools/sched/sim/policy.h"

namespace tl::sched::goodput {

inline int gpus(const Allocation& a) {
  int n = 0;
  for (int v : a) n += v;
  return n;
}

// c_i: each job's rate at its fair share, max(min, min(max, floor(GPUs / jobs))) GPUs of its
// fastest kind (the speedup's denominator).
inline std::vector<double> fairShareRates(const ThroughputModel& model, const std::vector<JobView>& jobs) {
  const int total = model.cluster().totalGpus();
  const int n = std::max<int>(1, int(jobs.size()));
  std::vector<double> c;
  c.reserve(jobs.size());
  for (const auto& j : jobs) {
    const int share = std::max(j.spec->minGpus, std::min(j.spec->maxGpus, total / n));
    Allocation fair(model.cluster().kinds.size(), 0);
    fair[size_t(model.kindsBySpeed(j.spec->model).front())] = share;
    c.push_back(model.rate(*j.spec, fair));
  }
  return c;
}

// The fewest GPUs of one kind (up to `room`) that raise `rate(alloc)` above `now`, the kind with
// the largest fall of c / rate per GPU: (gain, kind, step); kind -1 when no step fits or helps.
// `alloc` is changed only while a candidate is scored.
template <typename Rate>
std::tuple<double, int, int> bestStep(double c, double now, int room, const std::vector<int>& free,
                                      Allocation& alloc, const Rate& rate) {
  for (int step = 1; step <= room; ++step) {
    int bestKind = -1;
    double bestGain = 0;
    for (size_t k = 0; k < free.size(); ++k) {
      if (free[k] < step) continue;
      alloc[k] += step;
      const double r = rate(alloc);
      alloc[k] -= step;
      if (r <= now * (1 + 1e-9)) continue;
      const double gain = c * (1 / now - 1 / r) / step;
      if (gain > bestGain) bestGain = gain, bestKind = int(k);
    }
    if (bestKind >= 0) return {bestGain, bestKind, step};
  }
  return {0, -1, 0};
}

// sum_i c_i / charged rate_i over the jobs that hold GPUs in `alloc` (the p = -1 objective): a
// started job whose allocation changes is charged rate x (1 - rescaleCost / interval), the
// share of the interval the pause eats. `waiting(i)` is called for each job that holds none.
template <typename Waiting>
double chargedObjective(const ThroughputModel& model, const std::vector<JobView>& jobs,
                        const std::vector<double>& c, const std::vector<Allocation>& alloc,
                        double rescaleCost, double interval, const Waiting& waiting) {
  const double charged = std::max(0.0, 1 - rescaleCost / interval);
  double cost = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (gpus(alloc[i]) == 0) {
      waiting(i);
      continue;
    }
    double rate = model.rate(*jobs[i].spec, alloc[i]);
    if (jobs[i].started && alloc[i] != jobs[i].current) rate *= charged;
    cost += rate > 0 ? c[i] / rate : std::numeric_limits<double>::infinity();
  }
  return cost;
}

// Greedy marginal allocation: the free GPUs one step at a time to the job whose next step
// (`step(i)`: (gain per GPU, kind, GPUs), kind -1 for none) gains most, ties to the earlier job,
// for the jobs with `grows(i)`. A step whose GPUs others took since is asked for again.
template <typename Grows, typename Step>
void growGreedily(size_t jobs, std::vector<int>& free, std::vector<Allocation>& out,
                  const Grows& grows, const Step& step) {
  using Entry = std::tuple<double, long, int, int>;  // (gain per GPU, -index, kind, step)
  std::priority_queue<Entry> heap;
  const auto push = [&](size_t i) {
    const auto [gain, kind, n] = step(i);
    if (kind >= 0) heap.emplace(gain, -long(i), kind, n);
  };
  for (size_t i = 0; i < jobs; ++i)
    if (grows(i)) push(i);
  while (!heap.empty()) {
    const auto [gain, negIndex, kind, n] = heap.top();
    heap.pop();
    const size_t i = size_t(-negIndex);
    if (free[size_t(kind)] >= n) {
      out[i][size_t(kind)] += n;
      free[size_t(kind)] -= n;
    }
    push(i);
  }
}

}  // namespace tl::sched::goodput
