#include "coordinator/allocator.h"

#include <cmath>

#include "common/check.h"

namespace tl::coordinator {

namespace {

void validate(const std::vector<JobDemand>& jobs, int budget) {
  TL_REQUIRE(budget >= 0, "loader core budget must be at least 0, got ", budget);
  for (size_t j = 0; j < jobs.size(); ++j) {
    TL_REQUIRE(jobs[j].minWorkers >= 1, "job ", j, ": min workers must be at least 1, got ",
               jobs[j].minWorkers);
    TL_REQUIRE(jobs[j].maxWorkers >= jobs[j].minWorkers, "job ", j, ": max workers (",
               jobs[j].maxWorkers, ") is below min workers (", jobs[j].minWorkers, ")");
  }
}

std::vector<int> minimums(const std::vector<JobDemand>& jobs) {
  std::vector<int> workers;
  for (const JobDemand& job : jobs) workers.push_back(job.minWorkers);
  return workers;
}

// How many cores every allocation of `budget` hands out in total.
long handout(const std::vector<JobDemand>& jobs, int budget) {
  long mins = 0, maxs = 0;
  for (const JobDemand& job : jobs) {
    mins += job.minWorkers;
    maxs += job.maxWorkers;
  }
  return std::max(mins, std::min<long>(budget, maxs));
}

long sum(const std::vector<int>& workers) {
  long total = 0;
  for (int w : workers) total += w;
  return total;
}

// Adds cores one at a time to the job with the largest gain(j, workers); ties to fewer
// workers, then the lower index.
template <typename Gain>
std::vector<int> fillGreedily(const std::vector<JobDemand>& jobs, int budget, Gain gain) {
  validate(jobs, budget);
  std::vector<int> workers = minimums(jobs);
  for (long left = handout(jobs, budget) - sum(workers); left > 0; --left) {
    int best = -1;
    double bestGain = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (workers[j] >= jobs[j].maxWorkers) continue;
      double g = gain(j, workers[j]);
      if (best < 0 || g > bestGain || (g == bestGain && workers[j] < workers[size_t(best)])) {
        best = int(j);
        bestGain = g;
      }
    }
    TL_CHECK(best >= 0, "no job can take another core, yet ", left, " are left");
    ++workers[size_t(best)];
  }
  return workers;
}

}  // namespace

double predictedTotal(const std::vector<JobDemand>& jobs, const std::vector<int>& workers) {
  TL_CHECK_EQ(jobs.size(), workers.size());
  double total = 0;
  for (size_t j = 0; j < jobs.size(); ++j) total += jobs[j].model.predict(workers[j]);
  return total;
}

std::vector<int> allocateGreedy(const std::vector<JobDemand>& jobs, int budget) {
  return fillGreedily(jobs, budget, [&](size_t j, int w) {
    const ThroughputModel& m = jobs[j].model;
    double g = m.predict(w + 1) - m.predict(w);
    // inf - inf (a job with no measured cost) would be NaN; such a job gains nothing known.
    return std::isnan(g) ? 0.0 : g;
  });
}

std::vector<int> equalSplit(const std::vector<JobDemand>& jobs, int budget) {
  return fillGreedily(jobs, budget, [](size_t, int) { return 0.0; });
}

void enumerateSplits(const std::vector<JobDemand>& jobs, int budget,
                     const std::function<void(const std::vector<int>&)>& visit) {
  validate(jobs, budget);
  const long total = handout(jobs, budget);
  std::vector<int> split(jobs.size());
  // Depth-first over jobs; `left` is what the remaining jobs must take between them.
  std::function<void(size_t, long)> place = [&](size_t j, long left) {
    if (j == jobs.size()) {
      if (left == 0) visit(split);
      return;
    }
    long restMin = 0, restMax = 0;
    for (size_t k = j + 1; k < jobs.size(); ++k) {
      restMin += jobs[k].minWorkers;
      restMax += jobs[k].maxWorkers;
    }
    for (long w = jobs[j].minWorkers; w <= jobs[j].maxWorkers && w <= left - restMin; ++w) {
      if (left - w > restMax) continue;
      split[j] = int(w);
      place(j + 1, left - w);
    }
  };
  place(0, total);
}

std::vector<int> bestStaticSplit(const std::vector<JobDemand>& jobs, int budget) {
  std::vector<int> best;
  double bestTotal = -1;
  enumerateSplits(jobs, budget, [&](const std::vector<int>& split) {
    double total = predictedTotal(jobs, split);
    if (best.empty() || total > bestTotal) {
      best = split;
      bestTotal = total;
    }
  });
  return best;
}

}  // namespace tl::coordinator
