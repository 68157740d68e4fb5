// The bookkeeping of one EstExecutor::run: epochs (timers, loss, accuracy, evaluation), the
// per-step metrics line, and the TrainResult. Writes metrics and logs only on the lead.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "est/step_backend.h"
#include "est/step_timers.h"
#include "runtime/job_config.h"
#include "runtime/train/evaluate.h"
#include "runtime/train/metrics.h"
#include "runtime/train/trainer_result.h"

namespace tl::est {

// What one step measured, for recordStep.
struct StepRecord {
  int64_t stepsDone = 0;        // after this step
  double lr = 0;
  train::BatchStats global;     // all ESTs of the job
  double computeSeconds = 0;    // this process: ESTs' forward/backward + optimizer
  double commSeconds = 0;       // reduction, buffer broadcast, stats allreduce
  double stepSeconds = 0;
  std::optional<double> gradNorm;  // --clip-grad-norm: the global norm before clipping
  std::optional<OverlapFigures> overlap;  // how the reduction overlapped backward (--overlap on)
};

class RunRecorder {
 public:
  // Test-set evaluation (collective over the job's members); `options` as the caller sets them.
  using Evaluate = std::function<train::BatchStats(const train::EvalOptions& options)>;

  RunRecorder(const JobConfig& config, const train::StepPlan& plan, train::MetricsLog& metrics,
              Evaluate evaluate, int64_t firstStep);

  // Before a step of epoch `epoch` starting at `t0`: closes the previous epoch when it changes.
  void beginStep(int64_t epoch, EpochTimers::Clock::time_point t0, bool lead);
  // The loader's total wait so far (the epoch takes what is new).
  void dataWaitSoFar(double waitSeconds);
  void recordStep(const StepRecord& step, bool lead);
  train::TrainResult& result() { return result_; }

  // Closes the last epoch (or evaluates once when no step ran) and fills the result.
  // `collectives`: false on a process that left the job (no evaluation then).
  train::TrainResult finish(int64_t stepsDone, bool lead, bool collectives);

 private:
  void closeEpoch(bool partial, bool lead, bool collectives);

  const JobConfig& config_;
  const train::StepPlan& plan_;
  train::MetricsLog& metrics_;
  Evaluate evaluate_;
  train::TrainResult result_;
  EpochTimers epoch_;
  int64_t currentEpoch_ = -1;
  double lastWait_ = 0;
  int64_t imagesSeen_ = 0;
  int64_t firstStep_ = 0;
  EpochTimers::Clock::time_point runStart_ = EpochTimers::Clock::now();
};

}  // namespace tl::est
