// --workers auto: a job's processes register with the node coordinator (started on demand)
// and let it size their loader pools.
#pragma once

#include <memory>
#include <string>

#include "dataload/sample_cache.h"
#include "coordinator/coordinator_client.h"
#include "est/loader_tuner.h"
#include "runtime/job_config.h"

namespace tl::launcher {

// With a dataset cache (--cache-mb), each window also carries the cache's figures since the
// previous one, and a cache budget the coordinator assigns is applied (SampleCache::setBudget)
// when the executor next asks for a pool size, between steps; resizing never changes a batch.
class CoordinatorTuner final : public est::LoaderTuner {
 public:
  CoordinatorTuner(coordinator::CoordinatorClientOptions options, data::SampleCache* cache);
  bool connect() { return client_.connect(); }
  void report(const coordinator::LoaderObservation& loader, const coordinator::ComputeObservation& compute,
              double waitSeconds) override;
  std::optional<int> pendingWorkers() override;

 private:
  coordinator::CoordinatorClient client_;
  data::SampleCache* cache_;  // nullptr: no cache
  data::SampleCacheStats lastCache_;
};

// Connects this process of the job to the node coordinator in `runDir` (default:
// coordinator::defaultRunDir()), starting tl-coordinator from next to this executable when none
// runs. Waits at most ~1 s (the client's connect timeout): when the coordinator cannot be
// reached or does not answer, the job trains with its start size (a warning is logged) and
// attaches in the background once the coordinator answers.
// `cache` (may be nullptr): the job's dataset cache, which the coordinator may resize.
std::unique_ptr<CoordinatorTuner> connectToCoordinator(const JobConfig& job, const std::string& runDir,
                                                       int rank, data::SampleCache* cache = nullptr);

// The folder holding the running executable (to find sibling tools such as tl-coordinator).
std::string executableDir();

}  // namespace tl::launcher
