// A whole job at a step boundary, on disk: job definition, model, optimizer and reducer state
// and every EST's context. Written by one rank, atomically; read by every rank of a new launch
// with any number of processes.
#pragma once

#include <optional>
#include <string>

#include "dataload/data_identity.h"
#include "est/executor.h"
#include "runtime/job_config.h"

namespace tl::elastic {

struct JobCheckpoint {
  JobConfig config;        // the job's definition (logical workers included) and its last run settings
  std::string placement;   // where it ran when written (informational)
  est::JobState state;
  std::string path;  // the file it was read from (messages); empty when built in memory
  // The training data the job read (absent in checkpoints of tl before it was kept; see
  // checkResumeData).
  std::optional<data::DataIdentity> data;
};

// Writes <dir>/checkpoint.tl atomically (creating dir). InputError if it cannot be written.
void writeJobCheckpoint(const std::string& dir, const JobCheckpoint& checkpoint);

// Reads and verifies <dir>/checkpoint.tl. When it holds a data identity, the config's data folder
// is the identity's absolute one, so a job started with a relative --data-dir resumes on its own
// data from any working directory. InputError naming the file for a missing, truncated
// or corrupt checkpoint, or one whose contents do not fit together: "checkpoint '<path>' is
// inconsistent: ..." for a definition no flag could give (batch 0, an unknown model), a step
// past the end of a job given in steps, ESTs at different cursors or a generator state of the
// wrong size. (The SHA-256 catches damage, not edits: consistency is what is checked.)
JobCheckpoint readJobCheckpoint(const std::string& dir);

// Checks the checkpoint against the step plan of its job on the data at hand: the step it holds
// lies within the job and every EST's cursor is where that many steps leave it. InputError
// "checkpoint '<path>' is inconsistent: ..." otherwise.
void checkAgainstPlan(const JobCheckpoint& checkpoint, int64_t stepsPerEpoch, int64_t totalSteps);

// Checks that the data a resumed job is about to read (`job`'s dataset in its data folder) is the
// data the checkpoint's job trained on; it may have moved. InputError naming the folders and what
// differs otherwise. A checkpoint without a data identity (written by an older tl) is accepted;
// then, when `warn`, a warning says the data is not checked.
void checkResumeData(const JobCheckpoint& checkpoint, const JobConfig& job, bool warn);

// Restores `checkpoint` into `executor` (built for its job) after checkAgainstPlan and a check
// of the model's tensor names, shapes and dtypes; the optimizer's and reducer's own refusals
// come out as "checkpoint '<path>' is inconsistent: ..." too.
void restoreJob(est::EstExecutor& executor, const JobCheckpoint& checkpoint);

}  // namespace tl::elastic
