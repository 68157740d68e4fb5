// The scheduling policies, behind one interface that a simulator and a real scheduler share.
//
// A policy is asked for the whole allocation whenever something changed (a job arrived or
// finished, a rescale ended) and at the times it asks for itself (nextDecisionTime). It sees
// the active jobs (arrived, unfinished) and returns, for each, the GPUs of every kind it should
// hold from now on. The caller turns differences into actions: tl-sim charges a rescale cost;
// a real scheduler would start (`mpirun tl-launch`), rescale (`tl-ctl`) or stop jobs. Policies
// keep no state between calls beyond what JobView carries, so either caller can drive them.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tools/sched/sim/profiles.h"
#include "tools/sched/sim/workload.h"

namespace tl::sched {

using Allocation = std::vector<int>;  // GPUs per cluster kind

struct JobView {
  const JobSpec* spec = nullptr;
  double attainedGpuSeconds = 0;  // GPU-seconds held so far (Tiresias' attained service)
  Allocation current;             // what it holds now (all zero: waiting or preempted)
  bool started = false;           // ever ran
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // One allocation per job, in the order of `jobs` (which is by arrival, then id). The sum over
  // jobs never exceeds a kind's count.
  virtual std::vector<Allocation> allocate(double now, const std::vector<JobView>& jobs) = 0;
  // The next time (> now) the policy wants to decide again with nothing else happening.
  virtual double nextDecisionTime(double now, const std::vector<JobView>& jobs) const {
    return std::numeric_limits<double>::infinity();
  }
};

// What a policy may know of the setting it runs in.
struct PolicyOptions {
  double rescaleCostSeconds = 0;  // the pause an allocation change costs (goodput and
                                  // hetero-goodput charge it)
  double intervalSeconds = 60;    // goodput's and hetero-goodput's re-optimisation period
  // Only what a real tl job can do in place (tl-sched, docs/design/real-mode-scheduling.md):
  // a job holds one kind; once started it keeps that kind (rank 0 never leaves) and is never
  // preempted (it keeps at least max(1, min_gpus)). hetero-goodput honours it exactly;
  // yarn-cs and elastic are single-kind and ignore it (elastic can still ask a running job to
  // move when an earlier waiting job takes its kind; tl-sched then keeps it where it is and
  // records the ask, real_plan.h); makePolicy refuses it for las, elastic-hetero and goodput.
  bool inPlaceOnly = false;
};

// "yarn-cs", "las", "elastic", "elastic-hetero", "goodput", "hetero-goodput" (tl's default).
// InputError for another name, or for inPlaceOnly with a policy that cannot honour it.
std::unique_ptr<Policy> makePolicy(const std::string& name, const ThroughputModel& model,
                                   const PolicyOptions& options = {});
const std::vector<std::string>& policyNames();

// The Pollux-style goodput-aware policy (goodput_policy.cpp; see there).
std::unique_ptr<Policy> makeGoodputPolicy(const ThroughputModel& model,
                                          const PolicyOptions& options);

// tl's default: goodput's objective with elastic-hetero's placement over kinds, deciding at
// events, in-place rescale cost, least-attained-service admission (hetero_goodput_policy.cpp).
std::unique_ptr<Policy> makeHeteroGoodputPolicy(const ThroughputModel& model,
                                                const PolicyOptions& options);

}  // namespace tl::sched
