// Jobs that need more than GPUs: each has a loader (CPU cores) and a dataset cache (memory),
// and its throughput depends on both as measured by tl-profile --cache-mb: the worker model
// rate(c) = min(C, c / (a*c + b)) over its loader cores c, with b moved by the cache budget
// (coordinator/cache_model.h). Synergy's mix: CPU-hungry jobs (heavy augmentation: many
// cores per GPU), memory-hungry jobs (slow storage: each miss costs a worker a long read) and
// insensitive ones (a slow model: one core per GPU and no cache keep up). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/cache_model.h"
#include "coordinator/throughput_model.h"

namespace tl::sched {

struct ResourceServer {
  int gpus = 8;
  int cpus = 24;
  double memoryBytes = 400e9;  // cache memory to split among the jobs on it
};

struct ResourceJob {
  std::string id;
  std::string kind;  // "cpu-hungry", "memory-hungry" or "insensitive"
  double arrival = 0;
  int gpus = 1;      // on one server
  double work = 0;   // samples
  coordinator::ThroughputModel loader;  // the job's rate over its loader cores, fully cached
  coordinator::CacheProfile cache;
  int maxCpus = 32;
  // Samples/s with `cpus` loader cores and `cacheBytes` of cache (cpus >= 1).
  double rate(int cpus, double cacheBytes) const { return cache.predict(loader, cpus, cacheBytes); }
};

struct ResourceMixOptions {
  int jobs = 60;
  double spanSeconds = 4 * 3600;  // Poisson arrivals over this span
  double meanHours = 1.0;         // mean duration at the job's best rate (exponential)
  std::vector<double> kindShares{1.0 / 3, 1.0 / 3, 1.0 / 3};  // cpu, memory, insensitive
  uint64_t seed = 1;
};

// A seeded mix; GPUs 1, 2, 4 or 8 (shares 0.5, 0.25, 0.15, 0.1). InputError for bad options.
std::vector<ResourceJob> generateResourceMix(const ResourceMixOptions& options);

// A job's best rate (its cores and cache unlimited).
double bestRate(const ResourceJob& job);

}  // namespace tl::sched
