// Job traces as CSV, so that real traces can be replayed and generated ones kept.
//
// Columns (header required, in any order; '#' lines are comments):
//   id            unique job name
//   arrival_s     seconds from the start of the trace, >= 0
//   model         a model of the profiles (e.g. resnet20)
//   work_samples  samples the job processes before it is done, > 0
//   min_gpus      fewest GPUs an elastic policy may give it, >= 1
//   max_gpus      most GPUs an elastic policy may give it, >= min_gpus
//   request_gpus  optional: the gang non-elastic policies give it, min..max; default max_gpus
//   ests          optional: logical workers (DDP world size), >= max_gpus; default max_gpus
//   queue         optional: capacity queue; default "default"
#pragma once

#include <string>
#include <vector>

#include "tools/sched/sim/workload.h"

namespace tl::sched {

// Parses a trace. Every bad row is reported, by line, in one InputError
// ("<source>:<line>: <column>: ..."), up to 20 of them. Jobs come back sorted by arrival
// (stable: rows with the same arrival keep their order).
std::vector<JobSpec> parseTrace(const std::string& text, const std::string& source);
std::vector<JobSpec> readTrace(const std::string& path);

std::string formatTrace(const std::vector<JobSpec>& jobs);

// InputError when a job cannot run on the cluster at all (its gang exceeds every kind's count or its
// queue's maximum share) or names an unknown queue.
void checkTraceFits(const std::vector<JobSpec>& jobs, const ClusterSpec& cluster);

}  // namespace tl::sched
