// yarn-cs, las, elastic and elastic-hetero (goodput: goodput_policy.cpp). Each is a plain function
// of the active jobs (see policy.h).
#include <algorithm>
#include <cmath>
#include <queue>
#include <tuple>

#include "common/check.h"
#include "tools/sched/sim/policy.h"

namespace tl::sched {
namespace {

int sum(const Allocation& a) {
  int n = 0;
  for (int v : a) n += v;
  return n;
}

// The one kind a single-kind allocation uses; -1 when empty.
int kindOf(const Allocation& a) {
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k] > 0) return int(k);
  return -1;
}

std::vector<int> capacity(const ClusterSpec& c) {
  std::vector<int> free;
  for (const auto& k : c.kinds) free.push_back(k.count);
  return free;
}

// YARN's capacity scheduler: queues with guaranteed shares, FIFO inside a queue, the whole
// gang request on one kind (YARN does not know GPU speeds: the first kind in cluster order
// with room), idle capacity lent up to a queue's maximum share, no preemption, no elasticity.
// Every waiting job that fits is started, the most under-served queue first.
class YarnCapacity : public Policy {
 public:
  explicit YarnCapacity(const ThroughputModel& model) : model_(model) {}
  std::string name() const override { return "yarn-cs"; }

  std::vector<Allocation> allocate(double, const std::vector<JobView>& jobs) override {
    const ClusterSpec& c = model_.cluster();
    std::vector<QueueSpec> queues = c.queues;
    if (queues.empty()) queues.push_back({"default", 1, 1});
    const double total = c.totalGpus();
    std::vector<int> free = capacity(c);
    std::vector<double> usage(queues.size(), 0);
    std::vector<std::vector<size_t>> waiting(queues.size());
    std::vector<Allocation> out(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      out[i] = jobs[i].current;
      const int q = c.queues.empty() ? 0 : c.queueIndex(jobs[i].spec->queue);
      TL_CHECK(q >= 0, "job ", jobs[i].spec->id, " names unknown queue ", jobs[i].spec->queue);
      const int held = sum(out[i]);
      for (size_t k = 0; k < free.size(); ++k) free[k] -= out[i][k];
      usage[q] += held;
      if (held == 0) waiting[q].push_back(i);
    }
    for (;;) {
      int totalFree = 0;
      for (int f : free) totalFree += f;
      if (totalFree == 0) break;
      std::vector<size_t> order(queues.size());
      for (size_t q = 0; q < order.size(); ++q) order[q] = q;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return usage[a] / queues[a].guaranteed < usage[b] / queues[b].guaranteed;
      });
      bool started = false;
      for (size_t q : order) {
        for (auto it = waiting[q].begin(); it != waiting[q].end() && !started; ++it) {
          const int g = jobs[*it].spec->gangGpus();
          if (usage[q] + g > queues[q].maxShare * total + 1e-9 || g > totalFree) continue;
          for (size_t k = 0; k < free.size(); ++k) {
            if (free[k] < g) continue;
            out[*it][k] = g;
            free[k] -= g;
            usage[q] += g;
            waiting[q].erase(it);
            started = true;
            break;
          }
          if (started) break;
        }
        if (started) break;
      }
      if (!started) break;
    }
    return out;
  }

 private:
  const ThroughputModel& model_;
};

// Tiresias-like discretised least-attained-service: jobs in priority levels by attained
// GPU-seconds (thresholds 1 and 10 GPU-hours), FIFO inside a level, the whole gang on the
// fastest kind with room (a running job keeps its kind when it can); lower levels are
// preempted for higher ones; jobs that fit behind a blocked one are started (backfilling).
class LeastAttainedService : public Policy {
 public:
  explicit LeastAttainedService(const ThroughputModel& model) : model_(model) {}
  std::string name() const override { return "las"; }

  static constexpr double kThresholds[] = {3600.0, 36000.0};
  static constexpr double kSlack = 1e-6;  // GPU-seconds: rounding never re-asks at `now`

  static int level(double attained) {
    int l = 0;
    for (double t : kThresholds) l += attained >= t - kSlack;
    return l;
  }

  std::vector<Allocation> allocate(double, const std::vector<JobView>& jobs) override {
    std::vector<size_t> order(jobs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return level(jobs[a].attainedGpuSeconds) < level(jobs[b].attainedGpuSeconds);
    });
    std::vector<int> free = capacity(model_.cluster());
    std::vector<Allocation> out(jobs.size(), Allocation(free.size(), 0));
    for (size_t i : order) {
      const int g = jobs[i].spec->gangGpus();
      int kind = kindOf(jobs[i].current);
      if (kind < 0 || free[kind] < g) {
        kind = -1;
        for (int k : model_.kindsBySpeed(jobs[i].spec->model))
          if (free[k] >= g) {
            kind = k;
            break;
          }
      }
      if (kind < 0) continue;
      out[i][kind] = g;
      free[kind] -= g;
    }
    return out;
  }

  double nextDecisionTime(double now, const std::vector<JobView>& jobs) const override {
    double next = std::numeric_limits<double>::infinity();
    for (const auto& j : jobs) {
      const int held = sum(j.current);
      if (held == 0) continue;
      for (double t : kThresholds)
        if (j.attainedGpuSeconds < t - kSlack) {
          next = std::min(next, now + (t - j.attainedGpuSeconds) / held);
          break;
        }
    }
    return next;
  }

 private:
  const ThroughputModel& model_;
};

// Elastic policies: every active job in arrival order gets its min_gpus if they are free
// (running jobs shrink towards their minimum to admit arrivals), then the remaining GPUs are
// shared out one step at a time to the job with the smallest share held/max_gpus (fair
// shares), a step being the fewest GPUs that make the job faster.
// Single-kind: a job uses one kind (its current one when it can, else the fastest with room).
// Heterogeneous: a job may hold several kinds; each step takes the GPUs with the best gain,
// the job's ESTs placed by the planner's rule (ThroughputModel::rate).
class Elastic : public Policy {
 public:
  Elastic(const ThroughputModel& model, bool heterogeneous)
      : model_(model), hetero_(heterogeneous) {}
  std::string name() const override { return hetero_ ? "elastic-hetero" : "elastic"; }

  std::vector<Allocation> allocate(double, const std::vector<JobView>& jobs) override {
    std::vector<int> free = capacity(model_.cluster());
    std::vector<Allocation> out(jobs.size(), Allocation(free.size(), 0));
    for (size_t i = 0; i < jobs.size(); ++i) admit(jobs[i], free, out[i]);

    using Entry = std::tuple<double, size_t>;  // (share held, arrival order)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const int held = sum(out[i]);
      if (held > 0 && held < jobs[i].spec->maxGpus)
        heap.emplace(double(held) / jobs[i].spec->maxGpus, i);
    }
    while (!heap.empty()) {
      const size_t i = std::get<1>(heap.top());
      heap.pop();
      if (!grow(*jobs[i].spec, free, out[i])) continue;
      const int held = sum(out[i]);
      if (held < jobs[i].spec->maxGpus) heap.emplace(double(held) / jobs[i].spec->maxGpus, i);
    }
    return out;
  }

 private:
  void admit(const JobView& job, std::vector<int>& free, Allocation& out) const {
    const int need = job.spec->minGpus;
    const auto& bySpeed = model_.kindsBySpeed(job.spec->model);
    if (!hetero_) {
      int kind = kindOf(job.current);
      if (kind < 0 || free[kind] < need) {
        kind = -1;
        for (int k : bySpeed)
          if (free[k] >= need) {
            kind = k;
            break;
          }
      }
      if (kind < 0) return;
      out[kind] = need;
      free[kind] -= need;
      return;
    }
    int available = 0;
    for (int f : free) available += f;
    if (available < need) return;
    int left = need;
    // What it holds now first (fewer moves), then the fastest kinds.
    for (size_t k = 0; k < free.size() && left > 0; ++k) {
      const int take = std::min({left, free[k], job.current[k]});
      out[k] += take;
      free[k] -= take;
      left -= take;
    }
    for (int k : bySpeed) {
      const int take = std::min(left, free[k]);
      out[k] += take;
      free[k] -= take;
      left -= take;
    }
    TL_CHECK_EQ(left, 0);
  }

  // Adds the fewest GPUs (of one kind) that raise the job's rate, the best gain per GPU among
  // the kinds allowed. False when no step helps or fits.
  bool grow(const JobSpec& job, std::vector<int>& free, Allocation& alloc) const {
    const int room = job.maxGpus - sum(alloc);
    const double now = model_.rate(job, alloc);
    const int single = hetero_ ? -1 : kindOf(alloc);
    for (int step = 1; step <= room; ++step) {
      int bestKind = -1;
      double bestGain = 1e-9 * std::max(1.0, now);
      for (size_t k = 0; k < free.size(); ++k) {
        if (free[k] < step || (single >= 0 && int(k) != single)) continue;
        alloc[k] += step;
        const double gain = model_.rate(job, alloc) - now;
        alloc[k] -= step;
        if (gain > bestGain) {
          bestGain = gain;
          bestKind = int(k);
        }
      }
      if (bestKind >= 0) {
        alloc[bestKind] += step;
        free[bestKind] -= step;
        return true;
      }
    }
    return false;
  }

  const ThroughputModel& model_;
  bool hetero_;
};

}  // namespace

const std::vector<std::string>& policyNames() {
  static const std::vector<std::string> names{"yarn-cs",        "las",     "elastic",
                                              "elastic-hetero", "goodput", "hetero-goodput"};
  return names;
}

std::unique_ptr<Policy> makePolicy(const std::string& name, const ThroughputModel& model,
                                   const PolicyOptions& options) {
  if (options.inPlaceOnly) {
    if (name == "las")
      inputError("policy las preempts jobs, which a real job cannot do in place (rank 0 cannot be "
                 "moved or stopped); in-place policies: yarn-cs, elastic, hetero-goodput");
    if (name == "elastic-hetero")
      inputError("policy elastic-hetero mixes kinds in one job, which a real job cannot (its "
                 "processes emulate one kind); in-place policies: yarn-cs, elastic, hetero-goodput");
    if (name == "goodput")
      inputError("policy goodput moves jobs between kinds and mixes them, which a real job cannot "
                 "do in place; in-place policies: yarn-cs, elastic, hetero-goodput");
  }
  if (name == "yarn-cs") return std::make_unique<YarnCapacity>(model);
  if (name == "las") return std::make_unique<LeastAttainedService>(model);
  if (name == "elastic") return std::make_unique<Elastic>(model, false);
  if (name == "elastic-hetero") return std::make_unique<Elastic>(model, true);
  if (name == "goodput") return makeGoodputPolicy(model, options);
  if (name == "hetero-goodput") return makeHeteroGoodputPolicy(model, options);
  inputError("unknown policy '", name,
             "' (known: yarn-cs, las, elastic, elastic-hetero, goodput, hetero-goodput)");
}

}  // namespace tl::sched
