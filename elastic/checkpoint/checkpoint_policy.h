// When a running job writes a checkpoint and when it stops: every K steps, at a given step,
// or at the first step boundary after SIGUSR1 (then it stops, so it can be resumed elsewhere).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "dataload/data_identity.h"
#include "est/executor.h"

namespace tl::elastic {

struct CheckpointPolicyOptions {
  std::string dir;              // empty: no checkpoints (a stop request then stops without one)
  int64_t every = 0;            // checkpoint every this many steps (0: never periodically)
  int64_t stopAtStep = 0;       // checkpoint and stop after this step (0: no such stop)
  const std::atomic<bool>* stopRequested = nullptr;  // set asynchronously (a signal handler)
};

class CheckpointPolicy final : public est::StepObserver {
 public:
  explicit CheckpointPolicy(CheckpointPolicyOptions options) : options_(std::move(options)) {}

  // Agrees with every process on whether a stop was requested (one tiny allreduce), writes the
  // checkpoint from rank 0 when one is due, and returns Stop after a requested stop.
  est::StepAction afterStep(int64_t stepsDone, est::EstExecutor& executor) override;

  bool stopped() const { return stopped_; }
  bool stoppedBySignal() const { return stoppedBySignal_; }
  int64_t lastCheckpointStep() const { return lastCheckpointStep_; }

 private:
  CheckpointPolicyOptions options_;
  bool stopped_ = false;
  bool stoppedBySignal_ = false;
  int64_t lastCheckpointStep_ = -1;
  std::optional<data::DataIdentity> data_;  // rank 0, from its first checkpoint on
};

// Writes the executor's state as a checkpoint (collective; rank 0 writes). `data` is the job's
// training data, kept in the checkpoint; rank 0 identifies it when it is not given.
void checkpointNow(est::EstExecutor& executor, const std::string& dir,
                   std::optional<data::DataIdentity>* data = nullptr);

}  // namespace tl::elastic
