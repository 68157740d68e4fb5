#include "elastic/placement/placement_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/check.h"

namespace tl::elastic {
namespace {

constexpr int64_t kUnbounded = int64_t(1) << 40;

// The most ESTs at t seconds each that fit in `makespan`, with the same products the candidates
// are made of, so k * t <= k * t holds exactly.
int64_t fitting(double t, double makespan) {
  int64_t k = int64_t(std::floor(makespan / t));
  while (double(k + 1) * t <= makespan) ++k;
  while (k > 0 && double(k) * t > makespan) --k;
  return k;
}

}  // namespace

int64_t estCapacity(const ProcessSpeed& p) {
  if (p.memoryLimitBytes <= 0 || p.bytesPerEst <= 0) return kUnbounded;
  return int64_t(std::floor(p.memoryLimitBytes / p.bytesPerEst));
}

double predictedStepSeconds(const std::vector<int>& counts, const std::vector<ProcessSpeed>& processes) {
  TL_REQUIRE(counts.size() == processes.size(), "placement of ", counts.size(), " entries for ", processes.size(),
             " measured processes");
  double worst = 0;
  for (size_t g = 0; g < counts.size(); ++g) worst = std::max(worst, double(counts[g]) * processes[g].secondsPerEst);
  return worst;
}

int estsMoved(const std::vector<int>& from, const std::vector<int>& to) {
  TL_REQUIRE(from.size() == to.size(), "placements of ", from.size(), " and ", to.size(), " entries");
  int moved = 0;
  for (size_t g = 0; g < to.size(); ++g) moved += std::max(0, to[g] - from[g]);
  return moved;
}

PlacementPlan planPlacement(const std::vector<ProcessSpeed>& processes, int logicalWorkers, int minimumPerProcess,
                            const std::vector<int>& current, double slack) {
  const int64_t n = logicalWorkers;
  const size_t p = processes.size();
  TL_REQUIRE(p >= 1, "placement planner: no processes");
  TL_REQUIRE(std::isfinite(slack) && slack >= 0, "placement planner: slack must be >= 0, got ", slack);
  TL_REQUIRE(current.empty() || current.size() == p, "placement planner: the current placement has ",
             current.size(), " entries for ", p, " processes");
  TL_REQUIRE(n >= 1, "placement planner: the job needs at least one logical worker, got ", n);
  TL_REQUIRE(minimumPerProcess >= 0, "placement planner: minimum per process must be >= 0, got ", minimumPerProcess);
  TL_REQUIRE(int64_t(p) * minimumPerProcess <= n, "placement planner: ", p, " processes need at least ",
             int64_t(p) * minimumPerProcess, " logical workers but the job has ", n);
  std::vector<int64_t> cap(p);
  int64_t room = 0;
  for (size_t g = 0; g < p; ++g) {
    const ProcessSpeed& s = processes[g];
    TL_REQUIRE(std::isfinite(s.secondsPerEst) && s.secondsPerEst > 0, "placement planner: process ", g,
               ": seconds per EST must be finite and > 0, got ", s.secondsPerEst);
    TL_REQUIRE(std::isfinite(s.bytesPerEst) && s.bytesPerEst >= 0, "placement planner: process ", g,
               ": bytes per EST must be finite and >= 0, got ", s.bytesPerEst);
    TL_REQUIRE(std::isfinite(s.memoryLimitBytes), "placement planner: process ", g,
               ": memory limit must be finite, got ", s.memoryLimitBytes);
    cap[g] = std::min<int64_t>(estCapacity(s), n);
    TL_REQUIRE(cap[g] >= minimumPerProcess, "placement planner: process ", g, " has room for ", cap[g],
               " logical worker(s) (", s.memoryLimitBytes / 1e6, " MB limit, ", s.bytesPerEst / 1e6,
               " MB each) but needs at least ", minimumPerProcess);
    room += cap[g];
  }
  TL_REQUIRE(room >= n, "placement planner: the processes' memory holds ", room, " logical workers but the job has ", n);

  // Candidate makespans k * t_g; the least reachable one is the optimum.
  std::vector<double> candidates;
  for (size_t g = 0; g < p; ++g)
    for (int64_t k = std::max<int64_t>(1, minimumPerProcess); k <= cap[g]; ++k)
      candidates.push_back(double(k) * processes[g].secondsPerEst);
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  auto counts = [&](double makespan, std::vector<int64_t>* out) {
    int64_t total = 0;
    for (size_t g = 0; g < p; ++g) {
      const int64_t k = std::min(cap[g], fitting(processes[g].secondsPerEst, makespan));
      if (k < minimumPerProcess) return false;
      if (out) (*out)[g] = k;
      total += k;
    }
    return total >= n;
  };
  size_t lo = 0, hi = candidates.size() - 1;  // candidates[hi] reaches: every process at its cap
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (counts(candidates[mid], nullptr)) hi = mid;
    else lo = mid + 1;
  }
  // Upper bounds at the least makespan; any counts within them (and >= the minimum) summing to N
  // reach it. Start from the current placement clipped to the bounds (an empty one: the
  // minimum), then add ESTs where they finish earliest and take surplus back where it finishes
  // last, preferring ESTs that would arrive over ESTs that are already there.
  // Within `slack` of the least makespan, a placement that moves fewer ESTs is as good: measured
  // speeds are noisy, and a plan that wins by noise alone should not move ESTs.
  size_t bound = lo;
  while (bound + 1 < candidates.size() && candidates[bound + 1] <= candidates[lo] * (1 + slack)) ++bound;
  std::vector<int64_t> upper(p, 0);
  counts(candidates[bound], &upper);
  std::vector<int64_t> k(p, 0), now(p, 0);
  for (size_t g = 0; g < p; ++g) {
    now[g] = current.empty() ? 0 : current[g];
    k[g] = std::min(upper[g], std::max<int64_t>(minimumPerProcess, now[g]));
  }
  const auto load = [&](size_t g, int64_t extra) { return double(k[g] + extra) * processes[g].secondsPerEst; };
  int64_t total = std::accumulate(k.begin(), k.end(), int64_t(0));
  for (; total < n; ++total) {
    size_t pick = p;
    for (size_t g = 0; g < p; ++g)
      if (k[g] < upper[g] && (pick == p || load(g, 1) < load(pick, 1))) pick = g;
    ++k[pick];
  }
  for (; total > n; --total) {
    size_t pick = p;
    for (size_t g = 0; g < p; ++g) {
      if (k[g] <= minimumPerProcess) continue;
      const bool arriving = k[g] > now[g], pickArriving = pick != p && k[pick] > now[pick];
      if (pick == p || (arriving && !pickArriving) || (arriving == pickArriving && load(g, 0) > load(pick, 0)))
        pick = g;
    }
    --k[pick];
  }
  PlacementPlan plan;
  double rate = 0;
  for (size_t g = 0; g < p; ++g) {
    plan.counts.push_back(int(k[g]));
    rate += 1.0 / processes[g].secondsPerEst;
  }
  plan.stepSeconds = predictedStepSeconds(plan.counts, processes);
  plan.idealStepSeconds = double(n) / rate;
  return plan;
}

}  // namespace tl::elastic
