// --workers auto: a job's processes register with the node coordinator (started on demand)
// and let it size their loader pools.
#pragma once

#include <memory>
#include <string>

#include "dataload/tuning/coordinator_client.h"
#include "est/loader_tuner.h"
#include "runtime/job_config.h"

namespace tl::launcher {

class CoordinatorTuner final : public est::LoaderTuner {
 public:
  explicit CoordinatorTuner(tuning::CoordinatorClientOptions options) : client_(std::move(options)) {}
  bool connect() { return client_.connect(); }
  void report(const tuning::LoaderObservation& loader, const tuning::ComputeObservation& compute,
              double waitSeconds) override {
    client_.report(loader, compute, waitSeconds);
  }
  std::optional<int> pendingWorkers() override { return client_.pendingWorkers(); }

 private:
  tuning::CoordinatorClient client_;
};

// Connects this process of the job to the node coordinator in `runDir` (default:
// tuning::defaultRunDir()), starting tl-coordinator from next to this executable when none
// runs. Waits at most ~1 s (the client's connect timeout): when the coordinator cannot be
// reached or does not answer, the job trains with its start size (a warning is logged) and
// attaches in the background once the coordinator answers.
std::unique_ptr<CoordinatorTuner> connectToCoordinator(const JobConfig& job, const std::string& runDir,
                                                       int rank);

// The folder holding the running executable (to find sibling tools such as tl-coordinator).
std::string executableDir();

}  // namespace tl::launcher
