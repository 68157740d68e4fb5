// What the goodput-style policies (goodput_policy.cpp, hetero_goodput_policy.cpp) share: the
// speedup's denominator c_i, and the greedy step that grows one job. Internal to tl_sched.
#pragma once

#include <algorithm>
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

}  // namespace tl::sched::goodput
