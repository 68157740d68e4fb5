#include "tools/sched/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.h"

namespace tl::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct ActiveJob {
  size_t index = 0;  // into the trace
  double remaining = 0;
  double rate = 0;
  double pausedUntil = 0;
  JobView view;
};

}  // namespace

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = q * double(values.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (pos - double(lo)) * (values[hi] - values[lo]);
}

SimSummary summarise(const std::vector<JobResult>& jobs, const std::string& policy,
                     int totalGpus) {
  SimSummary s;
  s.policy = policy;
  s.jobs = int(jobs.size());
  std::vector<double> jct;
  double queueing = 0, gpuSeconds = 0, rescales = 0, first = kInf;
  for (const auto& r : jobs) {
    jct.push_back(r.jct());
    queueing += r.queueing();
    gpuSeconds += r.gpuSeconds;
    rescales += r.rescales;
    first = std::min(first, r.arrival);
    s.makespan = std::max(s.makespan, r.finish);
  }
  const double n = std::max<double>(1, double(jobs.size()));
  double sumJct = 0;
  for (double v : jct) sumJct += v;
  s.meanJct = sumJct / n;
  s.medianJct = quantile(jct, 0.5);
  s.p99Jct = quantile(jct, 0.99);
  s.meanQueueing = queueing / n;
  s.rescalesPerJob = rescales / n;
  s.queueingShare = sumJct > 0 ? queueing / sumJct : 0;
  if (jobs.empty()) return s;
  s.makespan -= first;
  const double capacity = double(totalGpus) * s.makespan;
  s.utilisation = capacity > 0 ? gpuSeconds / capacity : 0;
  return s;
}

double utilisationBetween(const std::vector<AllocationSample>& timeline, double from, double to,
                          int totalGpus) {
  if (!(to > from) || totalGpus <= 0) return 0;
  double held = 0;
  for (size_t i = 0; i + 1 < timeline.size(); ++i) {
    const double lo = std::max(from, timeline[i].time), hi = std::min(to, timeline[i + 1].time);
    if (hi <= lo) continue;
    int used = 0;
    for (int u : timeline[i].used) used += u;
    held += used * (hi - lo);
  }
  return held / (double(totalGpus) * (to - from));
}

SimResult simulate(const std::vector<JobSpec>& jobs, const ThroughputModel& model, Policy& policy,
                   const SimOptions& options) {
  const size_t kinds = model.cluster().kinds.size();
  for (size_t i = 1; i < jobs.size(); ++i)
    TL_CHECK(jobs[i - 1].arrival <= jobs[i].arrival, "the trace must be sorted by arrival");
  SimResult result;
  result.jobs.resize(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    result.jobs[i].id = jobs[i].id;
    result.jobs[i].arrival = jobs[i].arrival;
  }
  std::vector<ActiveJob> active;
  size_t nextArrival = 0, finished = 0;
  double now = 0;
  std::vector<JobView> views;
  std::vector<int> lastUsed;

  while (finished < jobs.size()) {
    // The next event: an arrival, a completion or a decision the policy asked for.
    double next = nextArrival < jobs.size() ? jobs[nextArrival].arrival : kInf;
    for (const auto& a : active)
      if (a.rate > 0) next = std::min(next, std::max(now, a.pausedUntil) + a.remaining / a.rate);
    views.clear();
    for (const auto& a : active) views.push_back(a.view);
    next = std::min(next, policy.nextDecisionTime(now, views));
    TL_CHECK(std::isfinite(next), "no job can ever run: ", active.size(),
             " waiting job(s) and no free GPUs for them (policy ", policy.name(), ")");
    next = std::max(next, now);

    // Progress up to `next`.
    for (auto& a : active) {
      const int held = [&] {
        int n = 0;
        for (int v : a.view.current) n += v;
        return n;
      }();
      if (held == 0) continue;
      const double worked = std::max(0.0, next - std::max(now, a.pausedUntil));
      a.remaining -= a.rate * worked;
      a.view.attainedGpuSeconds += held * (next - now);
      result.jobs[a.index].gpuSeconds += held * (next - now);
    }
    now = next;

    // Completions (a tolerance for rounding), then arrivals.
    for (size_t i = 0; i < active.size();) {
      const auto& a = active[i];
      if (a.rate > 0 && a.remaining <= 1e-9 * jobs[a.index].work && now >= a.pausedUntil) {
        result.jobs[a.index].finish = now;
        ++finished;
        active.erase(active.begin() + long(i));
      } else {
        ++i;
      }
    }
    while (nextArrival < jobs.size() && jobs[nextArrival].arrival <= now) {
      ActiveJob a;
      a.index = nextArrival;
      a.remaining = jobs[nextArrival].work;
      a.view.spec = &jobs[nextArrival];
      a.view.current.assign(kinds, 0);
      active.push_back(std::move(a));
      ++nextArrival;
    }
    if (active.empty()) continue;

    // The policy's decision, and its cost.
    views.clear();
    for (const auto& a : active) views.push_back(a.view);
    const auto decision = policy.allocate(now, views);
    ++result.decisions;
    TL_CHECK_EQ(decision.size(), active.size());
    std::vector<int> used(kinds, 0);
    for (size_t i = 0; i < active.size(); ++i) {
      auto& a = active[i];
      const Allocation& to = decision[i];
      TL_CHECK_EQ(to.size(), kinds);
      int held = 0;
      for (size_t k = 0; k < kinds; ++k) {
        used[k] += to[k];
        held += to[k];
      }
      TL_CHECK(held == 0 || (held >= a.view.spec->minGpus && held <= a.view.spec->maxGpus),
               policy.name(), " gave job ", a.view.spec->id, " ", held, " GPUs");
      if (to == a.view.current) continue;
      auto& r = result.jobs[a.index];
      if (held > 0) {
        if (!a.view.started) {
          r.start = now;
          a.view.started = true;
          a.pausedUntil = now + options.startCostSeconds;
        } else {
          ++r.rescales;
          a.pausedUntil = now + options.rescaleCostSeconds;
        }
      } else {
        ++r.rescales;  // preempted
      }
      a.view.current = to;
      a.rate = held > 0 ? model.rate(*a.view.spec, to) : 0;
    }
    for (size_t k = 0; k < kinds; ++k)
      TL_CHECK_LE(used[k], model.cluster().kinds[k].count, policy.name(), " over-allocated kind ",
                  model.cluster().kinds[k].name);
    if (used != lastUsed) {
      result.timeline.push_back({now, used});
      lastUsed = used;
    }
  }
  result.timeline.push_back({now, std::vector<int>(kinds, 0)});

  result.summary = summarise(result.jobs, policy.name(), model.cluster().totalGpus());
  if (!jobs.empty())
    result.summary.windowUtilisation = utilisationBetween(
        result.timeline, jobs.front().arrival, jobs.back().arrival, model.cluster().totalGpus());
  return result;
}

}  // namespace tl::sched
