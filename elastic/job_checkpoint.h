// A whole job at a step boundary, on disk: job definition, model, optimizer and reducer state
// and every EST's context. Written by one rank, atomically; read by every rank of a new launch
// with any number of processes.
#pragma once

#include <string>

#include "est/executor.h"
#include "runtime/job_config.h"

namespace tl::elastic {

struct JobCheckpoint {
  JobConfig config;        // the job's definition (logical workers included) and its last run settings
  std::string placement;   // where it ran when written (informational)
  est::JobState state;
};

// Writes <dir>/checkpoint.tl atomically (creating dir). InputError if it cannot be written.
void writeJobCheckpoint(const std::string& dir, const JobCheckpoint& checkpoint);

// Reads and verifies <dir>/checkpoint.tl. InputError naming the file for a missing, truncated
// or corrupt checkpoint, or one whose contents do not fit together.
JobCheckpoint readJobCheckpoint(const std::string& dir);

}  // namespace tl::elastic
