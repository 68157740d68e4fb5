// "goodput": a Pollux-style goodput-aware policy (Qiao et al., OSDI'21), the joint optimisation
// elastic-hetero's greedy growth is measured against. No batch-size adaptation: tl's ESTs keep
// a job's global batch fixed, so a job's goodput is its throughput.
//
// Every interval (60 s, at multiples of it) all active jobs' allocations are chosen together to
// maximise the generalised mean with p = -1 of their speedups, i.e. to minimise
// sum_i 1 / speedup_i, where speedup_i = rate_i(allocation) / rate_i(fair share) and the fair
// share is max(min_gpus, min(max_gpus, floor(GPUs / active jobs))) GPUs of the job's fastest
// kind. A zero speedup makes the mean zero, so first as many jobs as possible hold GPUs: in
// arrival order each gets its min_gpus (what it holds first, then the fastest kinds), as in
// the elastic policies. The rest is handed out greedily, one step at a time, to the job and
// kind with the largest fall of c_i / rate_i per GPU (c_i = rate_i(fair share)); a step is the
// fewest GPUs that raise the job's rate. The objective is separable and, for concave profiles,
// convex in each job's GPUs, which is where greedy marginal allocation is optimal.
//
// Each change is charged the rescale cost: a started job whose allocation changes is counted
// at rate x (1 - cost / interval) (the pause eats that share of the interval). The re-optimised
// allocation is taken only if it scores better than keeping every running job as it is and
// placing waiting jobs into the free GPUs (fewer waiting jobs first, then the charged sum).
// Between intervals (arrivals, completions) running jobs are kept and only waiting jobs are
// placed into free GPUs: an arrival on a full cluster waits for the next interval, as in Pollux.
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

int sum(const Allocation& a) { return goodput::gpus(a); }

class Goodput : public Policy {
 public:
  Goodput(const ThroughputModel& model, const PolicyOptions& options)
      : model_(model), options_(options) {
    TL_REQUIRE(options.intervalSeconds > 0, "goodput: the interval must be > 0 s, got ",
               options.intervalSeconds);
    TL_REQUIRE(options.rescaleCostSeconds >= 0, "goodput: the rescale cost must be >= 0 s");
  }
  std::string name() const override { return "goodput"; }

  std::vector<Allocation> allocate(double now, const std::vector<JobView>& jobs) override {
    const auto weights = goodput::fairShareRates(model_, jobs);
    auto keep = plan(jobs, weights, /*keepRunning=*/true);
    const double t = options_.intervalSeconds;
    if (std::abs(now - t * std::round(now / t)) > 1e-6) return keep;
    auto fresh = plan(jobs, weights, /*keepRunning=*/false);
    return score(jobs, weights, fresh) < score(jobs, weights, keep) ? fresh : keep;
  }

  double nextDecisionTime(double now, const std::vector<JobView>& jobs) const override {
    if (jobs.empty()) return kInf;
    const double t = options_.intervalSeconds;
    double next = (std::floor(now / t) + 1) * t;
    if (next - now < 1e-6) next += t;  // `now` a rounding short of a boundary: that one is done
    return next;
  }

 private:
  // (waiting jobs, sum of c_i / charged rate_i): lexicographically smaller is better.
  std::pair<int, double> score(const std::vector<JobView>& jobs, const std::vector<double>& c,
                               const std::vector<Allocation>& alloc) const {
    int waiting = 0;
    const double cost = goodput::chargedObjective(model_, jobs, c, alloc,
                                                  options_.rescaleCostSeconds,
                                                  options_.intervalSeconds, [&](size_t) { ++waiting; });
    return {waiting, cost};
  }

  std::vector<Allocation> plan(const std::vector<JobView>& jobs, const std::vector<double>& c,
                               bool keepRunning) const {
    std::vector<int> free;
    for (const auto& k : model_.cluster().kinds) free.push_back(k.count);
    std::vector<Allocation> out(jobs.size(), Allocation(free.size(), 0));
    std::vector<bool> fixed(jobs.size(), false);
    if (keepRunning)
      for (size_t i = 0; i < jobs.size(); ++i)
        if (sum(jobs[i].current) > 0) {
          fixed[i] = true;
          out[i] = jobs[i].current;
          for (size_t k = 0; k < free.size(); ++k) free[k] -= out[i][k];
        }
    for (size_t i = 0; i < jobs.size(); ++i)
      if (!fixed[i]) admit(jobs[i], free, out[i]);

    goodput::growGreedily(
        jobs.size(), free, out, [&](size_t i) { return !fixed[i] && sum(out[i]) > 0; },
        [&](size_t i) { return bestStep(*jobs[i].spec, c[i], free, out[i]); });
    return out;
  }

  // min_gpus: what the job holds first (fewer moves), then the fastest kinds; nothing if they
  // are not free.
  void admit(const JobView& job, std::vector<int>& free, Allocation& out) const {
    int left = job.spec->minGpus, available = 0;
    for (int f : free) available += f;
    if (available < left) return;
    for (size_t k = 0; k < free.size() && left > 0; ++k) {
      const int take = std::min({left, free[k], job.current[k]});
      out[k] += take, free[k] -= take, left -= take;
    }
    for (int k : model_.kindsBySpeed(job.spec->model)) {
      const int take = std::min(left, free[size_t(k)]);
      out[size_t(k)] += take, free[size_t(k)] -= take, left -= take;
    }
  }

  // The step that grows the job most per GPU (goodput::bestStep) on the plain rate.
  std::tuple<double, int, int> bestStep(const JobSpec& job, double c, const std::vector<int>& free,
                                        Allocation& alloc) const {
    return goodput::bestStep(c, model_.rate(job, alloc), job.maxGpus - sum(alloc), free, alloc,
                             [&](const Allocation& a) { return model_.rate(job, a); });
  }

  const ThroughputModel& model_;
  PolicyOptions options_;
};

}  // namespace

std::unique_ptr<Policy> makeGoodputPolicy(const ThroughputModel& model,
                                          const PolicyOptions& options) {
  return std::make_unique<Goodput>(model, options);
}

}  // namespace tl::sched
