// Where tl-submit meets the node coordinator (coordinator/): a job with workers=auto gets
// its loader pool sized by the coordinator, so the coordinator must be running first.
#pragma once

#include <string>
#include <vector>

#include "tools/submit/job_table.h"

namespace tl::submit {

struct CoordinatorSettings {
  std::string runDir;  // where the coordinator keeps its socket, lock and log
  std::string binary;  // the coordinator executable to start when none runs
};

bool anyAutoWorkers(const std::vector<SubmitJob>& jobs);

// Makes sure the node coordinator runs when any job has workers=auto (nothing otherwise), via
// tl::coordinator::ensureCoordinator. Returns a line for the user ("" when nothing was needed);
// throws InputError / TimeoutError when it was needed and could not be started.
std::string ensureCoordinatorForAutoJobs(const std::vector<SubmitJob>& jobs,
                                         const CoordinatorSettings& settings);

}  // namespace tl::submit
