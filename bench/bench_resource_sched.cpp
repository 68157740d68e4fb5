// bench/scheduler, CPU x memory: the resource-aware policy (cores and cache memory split by the
// jobs' sensitivity, coordinator::allocateJoint; placement where a server gains most) against
// GPU-proportional allocation, on generated mixes of CPU-hungry, memory-hungry and insensitive
// jobs (resource_workload.h). Every ratio is gpu-proportional / resource-aware within the same
// invocation and the same trace (> 1: resource-aware is better).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli/cli.h"
#include "tools/sched/resources/resource_sim.h"

namespace {

using namespace tl::sched;

struct Case {
  std::string name;
  std::vector<double> shares;  // cpu, memory, insensitive
  int jobs;
  double spanHours;
};

int runBench(int argc, char** argv) {
  int64_t seeds = 3;
  int servers = 4;
  auto app = tl::cli::makeApp("bench_resource_sched",
                              "resource-aware vs GPU-proportional CPU and memory allocation");
  tl::cli::addInt(*app, "--seeds", &seeds, "traces per case (seeds 1..N)", 1, 100);
  tl::cli::addInt(*app, "--servers", &servers, "servers of 8 GPUs, 24 cores, 400 GB", 1, 64);
  if (!tl::cli::parse(*app, argc, argv)) return 0;
  const std::vector<Case> cases{{"mixed 1:1:1", {1, 1, 1}, 80, 4},
                                {"cpu-heavy 2:1:1", {2, 1, 1}, 80, 4},
                                {"memory-heavy 1:2:1", {1, 2, 1}, 80, 4},
                                {"insensitive 1:1:4", {1, 1, 4}, 80, 4}};
  std::printf("%d servers x (8 GPUs, 24 cores, 400 GB); mean over %lld seeds\n", servers,
              static_cast<long long>(seeds));
  std::printf("%-20s %-17s %11s %11s %10s %10s %9s\n", "mix", "policy", "mean JCT h", "makespan h",
              "JCT ratio", "mksp ratio", "sim ms");
  for (const Case& c : cases) {
    double jct[2] = {0, 0}, makespan[2] = {0, 0}, ms[2] = {0, 0};
    for (int64_t seed = 1; seed <= seeds; ++seed) {
      ResourceMixOptions mix;
      mix.jobs = c.jobs;
      mix.spanSeconds = c.spanHours * 3600;
      mix.kindShares = c.shares;
      mix.seed = uint64_t(seed);
      const auto jobs = generateResourceMix(mix);
      for (int p = 0; p < 2; ++p) {
        ResourceSimOptions options;
        options.servers.assign(size_t(servers), ResourceServer{});
        options.policy = resourcePolicyNames()[size_t(p)];
        const auto start = std::chrono::steady_clock::now();
        const auto r = simulateResources(jobs, options);
        ms[p] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        jct[p] += r.meanJct / double(seeds);
        makespan[p] += r.makespan / double(seeds);
      }
    }
    for (int p = 0; p < 2; ++p) {
      std::printf("%-20s %-17s %11.2f %11.2f %9.2fx %9.2fx %9.0f\n", c.name.c_str(),
                  resourcePolicyNames()[size_t(p)].c_str(), jct[p] / 3600, makespan[p] / 3600,
                  jct[0] / jct[p], makespan[0] / makespan[p], ms[p] / double(seeds));
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tl::cli::run("bench_resource_sched", [&] { return runBench(argc, argv); }); }
