// Scheduling GPUs, CPU cores and cache memory together (Synergy, OSDI'22): a cluster of servers
// with GPUs, cores and memory; jobs (resource_workload.h) wait in arrival order and start on one
// server when it has their GPUs free (a job that does not fit lets later ones start:
// backfilling). Two policies decide where a job goes and how each server's cores and memory
// are split among the jobs on it, re-decided whenever a job starts or finishes there:
//
//  - "gpu-proportional": a job gets the server's cores and memory in proportion to its GPUs
//    (3 cores and 50 GB a GPU on the default server), placed on the first server that fits
//    (fewest free GPUs first: best fit).
//  - "resource-aware": cores and memory are split to maximise the server's summed predicted
//    throughput (coordinator::allocateJoint, the coordinator's allocator; at least one core a GPU),
//    and a job goes to the server, among those that fit, where that sum gains most.
//
// Both admit the same jobs at the same moments as far as GPUs go; only the CPU and memory split
// and the choice among fitting servers differ. tl-sim runs it as `tl-sim resources`; it does
// not go through sched::Policy (whose allocations are GPUs per kind), so tl-sched cannot run
// it until that interface carries cores and memory. Torch-free, single-threaded.
#pragma once

#include <string>
#include <vector>

#include "tools/sched/resources/resource_workload.h"

namespace tl::sched {

struct ResourceSimOptions {
  std::vector<ResourceServer> servers = std::vector<ResourceServer>(4);
  std::string policy = "resource-aware";  // or "gpu-proportional"
  int memoryUnits = 16;                   // granules of a server's memory for the allocator
};

struct ResourceJobResult {
  std::string id, kind;
  double arrival = 0, start = -1, finish = -1;
  int server = -1;
  double jct() const { return finish - arrival; }
};

struct ResourceSimResult {
  std::string policy;
  std::vector<ResourceJobResult> jobs;
  double meanJct = 0, makespan = 0;
  std::vector<double> meanJctByKind;  // cpu-hungry, memory-hungry, insensitive
};

const std::vector<std::string>& resourcePolicyNames();

// InputError for an unknown policy, no server, or a job needing more GPUs than any server has.
ResourceSimResult simulateResources(const std::vector<ResourceJob>& jobs,
                                    const ResourceSimOptions& options);

}  // namespace tl::sched
