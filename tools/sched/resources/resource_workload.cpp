#include "tools/sched/resources/resource_workload.h"

#include <cmath>
#include <random>

#include "common/check.h"

namespace tl::sched {
namespace {

// Per GPU: the device's samples/s and a worker's seconds per sample, fully cached.
struct Kind {
  const char* name;
  double perGpuRate;       // C per GPU
  double workerSeconds;    // b: one loader core's time per sample, fully cached
  double sampleBytes;      // mean encoded bytes
  double storageSecondsPerByte;
  double datasetBytes;
};

// CPU-hungry: 6 cores a GPU for full speed, storage cheap. Memory-hungry: 1 core a GPU when
// cached, but a miss costs a worker 15 ms (slow storage), so uncached it needs 12 cores a GPU.
// Insensitive: a slow model that one core and no cache feed.
constexpr Kind kKinds[] = {
    {"cpu-hungry", 1000, 0.006, 110e3, 0.1e-9, 140e9},
    {"memory-hungry", 800, 0.001, 110e3, 136e-9, 140e9},
    {"insensitive", 150, 0.002, 110e3, 9e-9, 140e9},
};

}  // namespace

double bestRate(const ResourceJob& job) {
  return job.rate(job.maxCpus, job.cache.datasetBytes);
}

std::vector<ResourceJob> generateResourceMix(const ResourceMixOptions& o) {
  TL_REQUIRE(o.jobs >= 1, "resource mix: jobs must be at least 1, got ", o.jobs);
  TL_REQUIRE(o.spanSeconds > 0 && o.meanHours > 0, "resource mix: span and duration must be > 0");
  TL_REQUIRE(o.kindShares.size() == 3, "resource mix: give three kind shares (cpu, memory, insensitive)");
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(double(o.jobs) / o.spanSeconds);
  std::exponential_distribution<double> hours(1.0 / o.meanHours);
  std::discrete_distribution<int> kind(o.kindShares.begin(), o.kindShares.end());
  std::discrete_distribution<int> size({0.5, 0.25, 0.15, 0.1});
  const int gpuCounts[] = {1, 2, 4, 8};
  std::vector<ResourceJob> jobs;
  double t = 0;
  for (int i = 0; i < o.jobs; ++i) {
    ResourceJob j;
    char id[32];
    std::snprintf(id, sizeof id, "job-%04d", i);
    j.id = id;
    const Kind& k = kKinds[kind(rng)];
    j.kind = k.name;
    j.arrival = t;
    t += gap(rng);
    j.gpus = gpuCounts[size(rng)];
    j.loader = {0, k.workerSeconds, k.perGpuRate * j.gpus};
    j.cache = {k.datasetBytes, k.sampleBytes, k.storageSecondsPerByte, 0};
    j.maxCpus = 16 * j.gpus;
    j.work = std::max(60.0, hours(rng) * 3600) * bestRate(j);
    jobs.push_back(j);
  }
  return jobs;
}

}  // namespace tl::sched
