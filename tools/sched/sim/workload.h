// What tl-sim (and later tl-sched) schedules: a cluster of GPU kinds with capacity queues, and
// jobs with an arrival time, a model, an amount of work and a range of GPUs. Torch-free.
#pragma once

#include <string>
#include <vector>

namespace tl::sched {

struct GpuKind {
  std::string name;  // matches the `kind` column of the profiles
  int count = 0;     // GPUs of this kind in the cluster
};

// A YARN-style capacity queue: `guaranteed` and `maxShare` are fractions of all GPUs.
struct QueueSpec {
  std::string name;
  double guaranteed = 1;
  double maxShare = 1;
};

struct ClusterSpec {
  std::vector<GpuKind> kinds;
  std::vector<QueueSpec> queues;  // empty: one queue "default" holding everything
  int totalGpus() const;
  int kindIndex(const std::string& name) const;   // -1 when absent
  int queueIndex(const std::string& name) const;  // -1 when absent
};

struct JobSpec {
  std::string id;
  double arrival = 0;     // seconds from the start of the trace
  std::string model;      // a model of the profiles
  double work = 0;        // samples to process
  int minGpus = 1;
  int maxGpus = 1;
  int requestGpus = 0;    // what a non-elastic policy gives the job (its gang); 0: maxGpus
  int ests = 0;           // logical workers (DDP world size); 0: maxGpus
  std::string queue = "default";
  int logicalWorkers() const { return ests > 0 ? ests : maxGpus; }
  int gangGpus() const { return requestGpus > 0 ? requestGpus : maxGpus; }
};

// "fast:32,mid:16,slow:16" -> kinds. InputError naming `what` and the bad item.
std::vector<GpuKind> parseKinds(const std::string& text, const std::string& what);
// "a:0.5:1,b:0.5:1" (name:guaranteed:max) -> queues; shares must be in (0, 1] and sum of
// guaranteed <= 1 (+1e-9). InputError naming `what` and the bad item.
std::vector<QueueSpec> parseQueues(const std::string& text, const std::string& what);

}  // namespace tl::sched
