#include "tools/submit/coordinator_hook.h"

#include "common/check.h"
#include "coordinator/ensure_coordinator.h"

namespace tl::submit {

bool anyAutoWorkers(const std::vector<SubmitJob>& jobs) {
  for (const auto& job : jobs) {
    if (job.autoWorkers) return true;
  }
  return false;
}

std::string ensureCoordinatorForAutoJobs(const std::vector<SubmitJob>& jobs,
                                         const CoordinatorSettings& settings) {
  if (!anyAutoWorkers(jobs)) return "";
  bool started = coordinator::ensureCoordinator(settings.runDir, settings.binary);
  return tl::str("workers=auto: node coordinator ", started ? "started" : "already running", " in ",
                 settings.runDir);
}

}  // namespace tl::submit
