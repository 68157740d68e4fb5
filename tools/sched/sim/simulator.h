// tl-sim's event-driven simulator: jobs progress at their profiled rate between events
// (arrivals, completions, the policy's own decision times); at each event the policy
// re-allocates and every running job whose allocation changed pauses for the rescale cost
// (a preempted job pays it when it resumes; a first start costs SimOptions::startCostSeconds).
#pragma once

#include <string>
#include <vector>

#include "tools/sched/sim/policy.h"

namespace tl::sched {

struct SimOptions {
  double rescaleCostSeconds = 0;
  // Seconds a job's first start takes before it makes progress (a real job's mpirun and
  // tl-launch start-up; tl-sched's comparison measures it). 0: a first start is free.
  double startCostSeconds = 0;
};

struct JobResult {
  std::string id;
  double arrival = 0, start = -1, finish = -1;
  double gpuSeconds = 0;  // GPU-seconds held (paused time included)
  int rescales = 0;       // allocation changes of a started job (preemptions and resumes too)
  double jct() const { return finish - arrival; }
  double queueing() const { return start - arrival; }
};

// GPUs in use per kind from `time` until the next sample.
struct AllocationSample {
  double time = 0;
  std::vector<int> used;
};

struct SimSummary {
  std::string policy;
  int jobs = 0;
  double meanJct = 0, medianJct = 0, p99Jct = 0, makespan = 0, meanQueueing = 0;
  double utilisation = 0;  // GPU-seconds held / (GPUs x makespan)
  double rescalesPerJob = 0;
  double queueingShare = 0;  // total queueing delay / total JCT
  // GPUs held / GPUs over the arrival window (first to last arrival): whether the cluster was
  // busy while jobs came, which the whole-run utilisation hides behind a long tail.
  double windowUtilisation = 0;
};

struct SimResult {
  std::vector<JobResult> jobs;  // in trace order
  std::vector<AllocationSample> timeline;
  SimSummary summary;
  int decisions = 0;
};

SimResult simulate(const std::vector<JobSpec>& jobs, const ThroughputModel& model, Policy& policy,
                   const SimOptions& options);

// Mean, median and p99 JCT, makespan (first arrival to last finish), queueing, utilisation
// (GPU-seconds held / (GPUs x makespan)) and rescales per job of finished jobs.
SimSummary summarise(const std::vector<JobResult>& jobs, const std::string& policy, int totalGpus);

// Mean share of `totalGpus` held by the timeline's samples over [from, to]; 0 for an empty span.
double utilisationBetween(const std::vector<AllocationSample>& timeline, double from, double to,
                          int totalGpus);

// The q-quantile (0..1) by linear interpolation between order statistics.
double quantile(std::vector<double> values, double q);

}  // namespace tl::sched
