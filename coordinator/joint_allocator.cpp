#include "coordinator/joint_allocator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "common/check.h"
#include "coordinator/allocator.h"

namespace tl::coordinator {

namespace {

void validate(const std::vector<JointDemand>& jobs, const JointBudget& budget) {
  TL_REQUIRE(budget.cores >= 0, "loader core budget must be at least 0, got ", budget.cores);
  TL_REQUIRE(budget.memoryBytes >= 0, "cache memory budget must be at least 0, got ",
             budget.memoryBytes);
  TL_REQUIRE(budget.units >= 1 && budget.units <= 4096, "memory granules must be 1 to 4096, got ",
             budget.units);
  for (size_t j = 0; j < jobs.size(); ++j) {
    TL_REQUIRE(jobs[j].minWorkers >= 1, "job ", j, ": min workers must be at least 1, got ",
               jobs[j].minWorkers);
    TL_REQUIRE(jobs[j].maxWorkers >= jobs[j].minWorkers, "job ", j, ": max workers (",
               jobs[j].maxWorkers, ") is below min workers (", jobs[j].minWorkers, ")");
  }
}

// A job whose prediction is not a number (no measurement) gains nothing known.
double value(const JointDemand& job, int workers, int64_t bytes) {
  const double v = jointPredict(job, workers, bytes);
  return std::isfinite(v) ? v : 0.0;
}

long coresHandedOut(const std::vector<JointDemand>& jobs, int cores) {
  long mins = 0, maxs = 0;
  for (const JointDemand& job : jobs) {
    mins += job.minWorkers;
    maxs += job.maxWorkers;
  }
  return std::max(mins, std::min<long>(cores, maxs));
}

double granule(const JointBudget& budget) {
  return double(budget.memoryBytes) / double(budget.units);
}

}  // namespace

double jointPredict(const JointDemand& job, int workers, int64_t cacheBytes) {
  return job.cache.predict(job.model, workers, double(cacheBytes));
}

double jointPredictedTotal(const std::vector<JointDemand>& jobs, const std::vector<int>& workers,
                           const std::vector<int64_t>& cacheBytes) {
  TL_CHECK_EQ(jobs.size(), workers.size());
  TL_CHECK_EQ(jobs.size(), cacheBytes.size());
  double total = 0;
  for (size_t j = 0; j < jobs.size(); ++j) total += value(jobs[j], workers[j], cacheBytes[j]);
  return total;
}

int usefulUnits(const JointDemand& job, const JointBudget& budget) {
  if (!job.cache.known() || budget.memoryBytes <= 0) return 0;
  const double needed = std::ceil(job.cache.datasetBytes / granule(budget) - 1e-9);
  return int(std::clamp(needed, 0.0, double(budget.units)));
}

int64_t unitBytes(const JointDemand& job, const JointBudget& budget, int units) {
  const double bytes = std::floor(granule(budget) * units);
  return int64_t(std::min(bytes, std::ceil(job.cache.datasetBytes)));
}

JointSplit allocateJoint(const std::vector<JointDemand>& jobs, const JointBudget& budget) {
  validate(jobs, budget);
  const size_t n = jobs.size();
  const long total = coresHandedOut(jobs, budget.cores);
  const int units = budget.units;
  // best[j][c][u]: the highest sum over jobs < j using exactly c cores and u granules.
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  const size_t planes = size_t(total + 1) * size_t(units + 1);
  std::vector<double> best((n + 1) * planes, kNone);
  std::vector<int> pickW((n + 1) * planes, 0), pickU((n + 1) * planes, 0);
  auto at = [&](size_t j, long c, int u) { return j * planes + size_t(c) * size_t(units + 1) + size_t(u); };
  best[at(0, 0, 0)] = 0;
  for (size_t j = 0; j < n; ++j) {
    const int maxU = usefulUnits(jobs[j], budget);
    for (long c = 0; c <= total; ++c) {
      for (int u = 0; u <= units; ++u) {
        const double here = best[at(j, c, u)];
        if (here == kNone) continue;
        for (int w = jobs[j].minWorkers; w <= jobs[j].maxWorkers && c + w <= total; ++w) {
          for (int k = 0; k <= maxU && u + k <= units; ++k) {
            const double v = here + value(jobs[j], w, unitBytes(jobs[j], budget, k));
            const size_t to = at(j + 1, c + w, u + k);
            if (v > best[to]) {
              best[to] = v;
              pickW[to] = w;
              pickU[to] = k;
            }
          }
        }
      }
    }
  }
  int bestU = -1;
  for (int u = 0; u <= units; ++u) {
    if (best[at(n, total, u)] == kNone) continue;
    if (bestU < 0 || best[at(n, total, u)] > best[at(n, total, bestU)]) bestU = u;
  }
  TL_CHECK(bestU >= 0, "no split of ", total, " cores among ", n, " jobs");
  JointSplit split;
  split.workers.assign(n, 0);
  split.cacheBytes.assign(n, 0);
  split.predicted = best[at(n, total, bestU)];
  long c = total;
  int u = bestU;
  for (size_t j = n; j-- > 0;) {
    const size_t from = at(j + 1, c, u);
    split.workers[j] = pickW[from];
    split.cacheBytes[j] = unitBytes(jobs[j], budget, pickU[from]);
    c -= pickW[from];
    u -= pickU[from];
  }
  return split;
}

JointSplit bestJointSplitExhaustive(const std::vector<JointDemand>& jobs,
                                    const JointBudget& budget) {
  validate(jobs, budget);
  std::vector<JobDemand> coreDemands;
  for (const JointDemand& job : jobs) coreDemands.push_back({job.model, job.minWorkers, job.maxWorkers});
  JointSplit best;
  best.predicted = -1;
  std::vector<int> grains(jobs.size(), 0);
  enumerateSplits(coreDemands, budget.cores, [&](const std::vector<int>& workers) {
    std::function<void(size_t, int)> place = [&](size_t j, int left) {
      if (j == jobs.size()) {
        std::vector<int64_t> bytes;
        for (size_t k = 0; k < jobs.size(); ++k) bytes.push_back(unitBytes(jobs[k], budget, grains[k]));
        const double total = jointPredictedTotal(jobs, workers, bytes);
        if (total > best.predicted) best = {workers, bytes, total};
        return;
      }
      for (int g = 0; g <= std::min(left, usefulUnits(jobs[j], budget)); ++g) {
        grains[j] = g;
        place(j + 1, left - g);
      }
    };
    place(0, budget.units);
  });
  return best;
}

std::vector<int64_t> proportionalMemory(const std::vector<JointDemand>& jobs,
                                        const std::vector<int>& workers,
                                        const JointBudget& budget) {
  TL_CHECK_EQ(jobs.size(), workers.size());
  long cores = 0;
  for (size_t j = 0; j < jobs.size(); ++j) cores += jobs[j].cache.known() ? workers[j] : 0;
  std::vector<int64_t> bytes(jobs.size(), 0);
  for (size_t j = 0; j < jobs.size() && cores > 0; ++j) {
    if (!jobs[j].cache.known()) continue;
    const double share = double(budget.memoryBytes) * workers[j] / double(cores);
    bytes[j] = int64_t(std::min(share, std::ceil(jobs[j].cache.datasetBytes)));
  }
  return bytes;
}

}  // namespace tl::coordinator
