// How the executor lets something outside size its loader pool while it trains (the node
// coordinator, for --workers auto): it reports what it measured and applies new sizes at step
// boundaries. Resizing never changes a batch (per-sample randomness), only how fast it comes.
#pragma once

#include <optional>

#include "coordinator/throughput_model.h"

namespace tl::est {

class LoaderTuner {
 public:
  virtual ~LoaderTuner() = default;
  // One measurement window: what the loader produced and what the device consumed.
  virtual void report(const coordinator::LoaderObservation& loader, const coordinator::ComputeObservation& compute,
                      double waitSeconds) = 0;
  // A new pool size, once, when one was decided; nullopt otherwise. Called between steps.
  virtual std::optional<int> pendingWorkers() = 0;
};

}  // namespace tl::est
