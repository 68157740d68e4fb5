// "hetero-goodput": tl's default policy. It joins goodput's whole-allocation objective with
// elastic-hetero's placement over GPU kinds, charges tl's in-place rescale (not a
// checkpoint-restart) and decides at events, not only at ticks.
//
// Objective (as goodput, goodput_policy.cpp): minimise sum_i c_i / rate_i, the p = -1 mean of
// speedups over a fair share, where rate_i is the planner's rate on a mixed allocation
// (ThroughputModel::rate: ESTs placed over several kinds). c_i is the job's rate on its fair
// share max(min, min(max, floor(GPUs / active jobs))) of its fastest kind, weighted by
// sqrt(10)^-rung of its attained service (rungs every half decade from 0.1 to 100 GPU-hours,
// kRungs): the GPUs beyond the minimums go first to the jobs that have had the least, which
// under heavy-tailed durations are the ones likely to finish soonest.
//
// Plan: jobs are admitted at min_gpus in priority order, on what they hold first (a running
// job is not pushed onto a slower kind by a newcomer), the rest on the fastest free kinds; the
// free GPUs then go one step at a time to the job and kind with the largest
// fall of c_i / rate_i per GPU (a step: the fewest GPUs of one kind that raise the rate), and
// a job left on a slower kind while a faster one has free GPUs is moved there. The
// priority order is Tiresias' discretised least attained service (levels at 1 and 10
// GPU-hours, arrival order inside a level): when there are more jobs than GPUs, those that
// have had the least wait least, which is what mean JCT under heavy-tailed durations needs;
// FIFO (goodput, elastic-hetero) lets a few long jobs hold the cluster while short ones queue.
//
// Decisions: at every event (arrival, completion, a running job crossing a level while others
// wait); no periodic tick (the plan depends only on what events change). Two candidates are scored: `keep` (running jobs keep their
// GPUs and may grow into free ones; waiting jobs are admitted into free GPUs) and `fresh`
// (everything re-planned). The score is lexicographic: waiting jobs per priority level (higher
// priority first), then sum c_i / charged rate_i, where a started job whose allocation changes
// is charged rate x (1 - cost / interval) for tl's in-place pause
// (PolicyOptions::rescaleCostSeconds); the greedy steps and moves are charged alike, so a
// running job grows or moves only when the charged faster rate beats what it has. An arrival
// on a full cluster therefore gets GPUs at once (running jobs shrink in place), as in
// elastic-hetero, and freed GPUs are handed out at once, not at the next tick as in goodput.
// Re-planning at every event, not only when a job waits, matters on mixed kinds: a newcomer
// then gets a fast GPU from a job that holds more than it gains from, not a slow free one.
//
// In place only (PolicyOptions::inPlaceOnly, what tl-sched's real jobs can do): a job holds
// one kind; a started job keeps its kind and is never preempted. Then `fresh` first gives
// every running job max(1, min_gpus) of its own kind, a waiting job is admitted on the fastest
// kind with its min_gpus free, the greedy steps stay on the job's kind, and nothing is moved
// (`upgrade` is off). Without preemption a job crossing a level changes nothing (waiting jobs
// never attained service), so there are no decisions between events either.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "common/check.h"
#include "tools/sched/sim/goodput_steps.h"
#include "tools/sched/sim/policy.h"

namespace tl::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kThresholds[] = {3600.0, 36000.0};  // GPU-seconds: Tiresias' levels
constexpr int kLevels = 3;
// Weights on c_i: x sqrt(10)^-rung, rungs at Tiresias' 1 GPU-hour x 10^(k/2), k = -2..3 (0.1 to
// 100 GPU-hours every half decade; 1 and 10 GPU-hours are rungs). Under heavy-tailed durations
// a job's expected remaining service grows about in proportion to what it has attained, so a
// rung (x sqrt(10) attained) divides its weight by sqrt(10): the GPUs beyond the minimums go
// to the jobs likely to finish soonest, the least-attained-service order admission already
// uses, applied to growth. The levels (admission) stay Tiresias' coarse three.
constexpr double kGrowthBase = 3.1622776601683795;  // sqrt(10)
constexpr double kRungs[] = {360.0,     1138.4199576606166, 3600.0,
                             11384.199576606166, 36000.0, 113841.99576606166,
                             360000.0};
constexpr double kSlack = 1e-6;

int sum(const Allocation& a) { return goodput::gpus(a); }

int level(double attained) {
  int l = 0;
  for (double t : kThresholds) l += attained >= t - kSlack;
  return l;
}

int rung(double attained) {
  int r = 0;
  for (double t : kRungs) r += attained >= t - kSlack;
  return r;
}

struct Score {
  int waiting[kLevels] = {0, 0, 0};
  double cost = 0;
  bool operator<(const Score& o) const {
    for (int l = 0; l < kLevels; ++l)
      if (waiting[l] != o.waiting[l]) return waiting[l] < o.waiting[l];
    return cost < o.cost * (1 - 1e-12);
  }
};

class HeteroGoodput : public Policy {
 public:
  HeteroGoodput(const ThroughputModel& model, const PolicyOptions& options)
      : model_(model), options_(options) {
    TL_REQUIRE(options.intervalSeconds > 0, "hetero-goodput: the interval must be > 0 s, got ",
               options.intervalSeconds);
    TL_REQUIRE(options.rescaleCostSeconds >= 0,
               "hetero-goodput: the rescale cost must be >= 0 s");
  }
  std::string name() const override { return "hetero-goodput"; }

  std::vector<Allocation> allocate(double, const std::vector<JobView>& jobs) override {
    auto c = goodput::fairShareRates(model_, jobs);
    for (size_t i = 0; i < jobs.size(); ++i)
      c[i] *= std::pow(kGrowthBase, -rung(jobs[i].attainedGpuSeconds));
    std::vector<size_t> order(jobs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return level(jobs[a].attainedGpuSeconds) < level(jobs[b].attainedGpuSeconds);
    });
    auto keep = plan(jobs, c, order, /*keepRunning=*/true);
    auto fresh = plan(jobs, c, order, /*keepRunning=*/false);
    return score(jobs, c, fresh) < score(jobs, c, keep) ? fresh : keep;
  }

  double nextDecisionTime(double now, const std::vector<JobView>& jobs) const override {
    if (options_.inPlaceOnly) return kInf;
    // No periodic tick: between events the plan's inputs (active jobs, their GPUs) do not
    // change, so re-planning would return the same allocation. Only a running job crossing a
    // level while another waits may change who holds GPUs.
    double next = kInf;
    bool anyWaiting = false;
    for (const auto& j : jobs) anyWaiting = anyWaiting || sum(j.current) == 0;
    if (!anyWaiting) return next;
    for (const auto& j : jobs) {
      const int held = sum(j.current);
      if (held == 0) continue;
      for (double th : kThresholds)
        if (j.attainedGpuSeconds < th - kSlack) {
          next = std::min(next, now + (th - j.attainedGpuSeconds) / held);
          break;
        }
    }
    return next;
  }

 private:
  Score score(const std::vector<JobView>& jobs, const std::vector<double>& c,
              const std::vector<Allocation>& alloc) const {
    Score s;
    s.cost = goodput::chargedObjective(
        model_, jobs, c, alloc, options_.rescaleCostSeconds, options_.intervalSeconds,
        [&](size_t i) { ++s.waiting[level(jobs[i].attainedGpuSeconds)]; });
    return s;
  }

  std::vector<Allocation> plan(const std::vector<JobView>& jobs, const std::vector<double>& c,
                               const std::vector<size_t>& order, bool keepRunning) const {
    std::vector<int> free;
    for (const auto& k : model_.cluster().kinds) free.push_back(k.count);
    std::vector<Allocation> out(jobs.size(), Allocation(free.size(), 0));
    if (keepRunning)
      for (size_t i = 0; i < jobs.size(); ++i) {
        out[i] = jobs[i].current;
        for (size_t k = 0; k < free.size(); ++k) free[k] -= out[i][k];
      }
    else if (options_.inPlaceOnly)
      for (size_t i = 0; i < jobs.size(); ++i) {
        const int kind = kindHeld(jobs[i]);
        if (kind < 0) continue;
        // Never preempted, never moved: at least max(1, min_gpus) of the kind it runs on
        // (it holds that many now, so the running jobs' floors always fit).
        out[i][size_t(kind)] = std::max(1, jobs[i].spec->minGpus);
        free[size_t(kind)] -= out[i][size_t(kind)];
        TL_CHECK_GE(free[size_t(kind)], 0);
      }
    if (options_.inPlaceOnly)
      admitOnOneKind(jobs, order, free, out);
    else
      admit(jobs, order, free, out);

    grow(jobs, c, free, out);
    if (upgrade(jobs, free, out)) grow(jobs, c, free, out);
    return out;
  }

  // Moves running or admitted jobs from a slower kind onto free GPUs of a faster one, one GPU
  // at a time, while the job's charged rate rises (a 1-GPU job that started on a slow GPU is
  // not left there once a fast one is free; growth alone never moves it). True if any moved.
  bool upgrade(const std::vector<JobView>& jobs, std::vector<int>& free,
               std::vector<Allocation>& out) const {
    if (options_.inPlaceOnly) return false;  // a real job's rank 0 never leaves its kind
    bool moved = false;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (sum(out[i]) == 0) continue;
      for (bool again = true; again;) {
        again = false;
        int totalFree = 0;
        for (int f : free) totalFree += f;
        if (totalFree == 0) return moved;
        const double now = chargedRate(jobs[i], out[i]);
        double best = now * (1 + 1e-9);
        int from = -1, to = -1;
        for (size_t a = 0; a < free.size(); ++a) {
          if (out[i][a] == 0) continue;
          for (size_t b = 0; b < free.size(); ++b) {
            if (b == a || free[b] == 0) continue;
            --out[i][a], ++out[i][b];
            const double rate = chargedRate(jobs[i], out[i]);
            ++out[i][a], --out[i][b];
            if (rate > best) best = rate, from = int(a), to = int(b);
          }
        }
        if (from < 0) break;
        --out[i][size_t(from)], ++free[size_t(from)];
        ++out[i][size_t(to)], --free[size_t(to)];
        moved = again = true;
      }
    }
    return moved;
  }

  // The free GPUs one step at a time to the job and kind with the largest fall of c / rate per
  // GPU.
  void grow(const std::vector<JobView>& jobs, const std::vector<double>& c, std::vector<int>& free,
            std::vector<Allocation>& out) const {
    int totalFree = 0;
    for (int f : free) totalFree += f;
    if (totalFree == 0) return;
    goodput::growGreedily(
        jobs.size(), free, out, [&](size_t i) { return sum(out[i]) > 0; },
        [&](size_t i) { return bestStep(jobs[i], c[i], free, out[i]); });
  }

  // Admission at min_gpus. Which jobs: in priority order, while their min_gpus fit in the free
  // GPUs' count. Which GPUs: first every admitted job's own (a running job keeps its place;
  // a newcomer does not push an older job onto a slower kind), then, in priority order, the
  // fastest free kinds for the rest.
  void admit(const std::vector<JobView>& jobs, const std::vector<size_t>& order,
             std::vector<int>& free, std::vector<Allocation>& out) const {
    int count = 0;
    for (int f : free) count += f;
    std::vector<size_t> admitted;
    for (size_t i : order) {
      if (sum(out[i]) > 0 || jobs[i].spec->minGpus > count) continue;
      admitted.push_back(i);
      count -= jobs[i].spec->minGpus;
    }
    std::vector<int> left(jobs.size(), 0);
    for (size_t i : admitted) {
      left[i] = jobs[i].spec->minGpus;
      for (size_t k = 0; k < free.size() && left[i] > 0; ++k) {
        const int take = std::min({left[i], free[k], jobs[i].current[k]});
        out[i][k] += take, free[k] -= take, left[i] -= take;
      }
    }
    for (size_t i : admitted)
      for (int k : model_.kindsBySpeed(jobs[i].spec->model)) {
        const int take = std::min(left[i], free[size_t(k)]);
        out[i][size_t(k)] += take, free[size_t(k)] -= take, left[i] -= take;
      }
  }

  // In place only: the kind a started job runs on (it holds one, and keeps it); -1 for a job
  // that has not started.
  int kindHeld(const JobView& job) const {
    if (!job.started) return -1;
    int kind = -1;
    for (size_t k = 0; k < job.current.size(); ++k)
      if (job.current[k] > 0) {
        TL_CHECK(kind < 0, "hetero-goodput (in place): job ", job.spec->id, " holds several kinds");
        kind = int(k);
      }
    TL_CHECK(kind >= 0, "hetero-goodput (in place): started job ", job.spec->id, " holds nothing");
    return kind;
  }

  // In place only: waiting jobs in priority order, each at min_gpus on the fastest kind that
  // has them free (a job whose minimum fits no kind waits; later ones may still start).
  void admitOnOneKind(const std::vector<JobView>& jobs, const std::vector<size_t>& order,
                      std::vector<int>& free, std::vector<Allocation>& out) const {
    for (size_t i : order) {
      if (sum(out[i]) > 0) continue;
      const int need = jobs[i].spec->minGpus;
      for (int k : model_.kindsBySpeed(jobs[i].spec->model))
        if (free[size_t(k)] >= need) {
          out[i][size_t(k)] = need;
          free[size_t(k)] -= need;
          break;
        }
    }
  }

  // The job's rate on `alloc`, charged the in-place pause when a started job would change.
  double chargedRate(const JobView& job, const Allocation& alloc) const {
    const double rate = model_.rate(*job.spec, alloc);
    if (!job.started || alloc == job.current) return rate;
    return rate * std::max(0.0, 1 - options_.rescaleCostSeconds / options_.intervalSeconds);
  }

  // The fewest GPUs of one kind that raise the job's charged rate, the kind with the largest
  // fall of c / rate per GPU: (gain, kind, step); kind -1 when no step fits or helps. Growing
  // a running job in place pays the pause: it is taken only when the faster rate, charged,
  // still beats the rate it has.
  std::tuple<double, int, int> bestStep(const JobView& job, double c, const std::vector<int>& free,
                                        Allocation& alloc) const {
    // In place only, a step stays on the one kind the job holds.
    std::vector<int> own;
    if (options_.inPlaceOnly) {
      own.assign(free.size(), 0);
      for (size_t k = 0; k < free.size(); ++k)
        if (alloc[k] > 0) own[k] = free[k];
    }
    const std::vector<int>& usable = options_.inPlaceOnly ? own : free;
    int mostFree = 0;
    for (int f : usable) mostFree = std::max(mostFree, f);
    const int room = std::min(job.spec->maxGpus - sum(alloc), mostFree);  // a step is one kind
    if (room <= 0) return {0, -1, 0};
    const double now = chargedRate(job, alloc);
    if (!(now > 0)) return {0, -1, 0};
    return goodput::bestStep(c, now, room, usable, alloc,
                             [&](const Allocation& a) { return chargedRate(job, a); });
  }

  const ThroughputModel& model_;
  PolicyOptions options_;
};

}  // namespace

std::unique_ptr<Policy> makeHeteroGoodputPolicy(const ThroughputModel& model,
                                                const PolicyOptions& options) {
  return std::make_unique<HeteroGoodput>(model, options);
}

}  // namespace tl::sched
