// `tl-sim resources`: the CPU x memory scheduling simulation (resource_sim.h) on a generated
// mix of CPU-hungry, memory-hungry and insensitive jobs, under both policies, as a table.
#pragma once

#include <string>
#include <vector>

#include "tools/sched/resources/resource_sim.h"

namespace tl::sched {

// One row per result: policy, mean JCT, makespan, mean JCT per kind, and the ratios
// gpu-proportional / this (> 1: this is better) against `reference`.
std::string resourceTable(const std::vector<ResourceSimResult>& results,
                          const ResourceSimResult& reference);

// The subcommand; argv[0] is "resources". Returns the exit status.
int runResourceSim(int argc, char** argv);

}  // namespace tl::sched
