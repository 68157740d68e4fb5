// EstExecutor::run: the step loop, written as the consistency contract reads (docs/design/consistency-contract.md):
// every local EST computes its micro-batch (same data and generators as its DDP rank), the
// reduction combines them or asks for a replay, rank 0's buffers survive, one optimizer step.
#include <chrono>
#include <cmath>
#include <optional>
#include <cstdlib>
#include <thread>

#include "common/check.h"
#include "common/files.h"
#include "est/executor.h"
#include "est/loader_tuning.h"
#include "est/local_round.h"
#include "est/periodic_validation.h"
#include "est/run_recorder.h"
#include "runtime/models/state_dict_io.h"
#include "runtime/models/torchscript_model.h"
#include "runtime/train/evaluate.h"
#include "runtime/train/step.h"
#include "runtime/train/step_trace.h"

#include <spdlog/spdlog.h>

namespace tl::est {

using Clock = EpochTimers::Clock;

train::TrainResult EstExecutor::run(train::MetricsLog& metrics, StepObserver* observer) {
  RunRecorder::Evaluate evaluate;
  if (data_.test) {
    evaluate = [this](train::EvalOptions eo) {
      eo.device = replica_->device;
      return train::evaluate(*replica_->model, data_.test, *host_, eo);
    };
  }
  RunRecorder record(config_, plan_, metrics, std::move(evaluate), stepsDone_);
  // --eval-every: validation after the update of every S-th step and before the boundary's
  // observer (a checkpoint there, or a rescale, comes after it; a run resumed from that
  // checkpoint validates next at step 2S). It reads the parameters and changes nothing.
  PeriodicValidation validation(config_, stepsDone_, lead());
  const PeriodicValidation::Score score = [this] {
    train::EvalOptions eo;
    eo.workers = config_.workers;
    eo.device = replica_->device;
    return train::evaluateBatchLosses(*replica_->model, data_.test, *host_, config_.evalBatches, config_.batch, eo);
  };
  const PeriodicValidation::Save save = [this](const std::string& path) {
    models::saveStateDict(*replica_->model, path);
    models::saveTorchScript(*replica_->model, models::torchScriptSavePath(path));  // --model-file
    return train::paramsSha256(*replica_->model);
  };
  if (config_.traceFirst > 0 && !trace_ && inJob()) {
    trace_ = std::make_unique<train::StepTrace>(
        train::TraceSteps{config_.traceFirst, config_.traceLast},
        joinPath(joinPath(config_.outputDir, "trace"),
                 "rank-" + std::to_string(host_->rank()) + ".json"),
        replica_->device);
  }
  // The lead says where the trace went, once, when this process has written its part.
  const auto traceWritten = [this] {
    if (!trace_ || !trace_->written() || !lead() || traceReported_) return;
    traceReported_ = true;
    const train::TraceCounts& c = trace_->counts();
    spdlog::info("trace of steps {}-{} ({} recorded here: {} ATen ops, {}) in {}/",
                 config_.traceFirst, config_.traceLast, c.steps, c.hostOps,
                 c.deviceRecorded ? std::to_string(c.deviceEvents) + " device kernels and copies"
                 : replica_->device.is_cpu()
                     ? std::string("host only")
                     : std::string("no device events: this libtorch records none"),
                 joinPath(config_.outputDir, "trace"));
  };
  retiredLoaders_ = data::LoaderStats{};
  // DDP's start: every member takes the parameters and buffers of EST 0's owner.
  if (inJob() && stepsDone_ == 0) train::broadcastState(*replica_->model, *replica_->deviceComm, placement_.owner(0));
  try {
    while (inJob() && stepsDone_ < plan_.totalSteps) {
      const int64_t traced = stepsDone_ + 1;  // as the log counts steps
      if (trace_) trace_->beginStep(traced);
      const auto r0 = Clock::now();
      if (!round_) startRound();
      const int64_t step = stepsDone_;
      const auto t0 = Clock::now();
      const double waitBefore = loaderStats().waitSeconds;
      double reduceSeconds = 0;
      reduceOrReplay(step / plan_.stepsPerEpoch, reduceSeconds, record.result());
      record.beginStep(step / plan_.stepsPerEpoch, t0, lead());
      record.dataWaitSoFar(loaderStats().waitSeconds);

      // Every exchange of the step comes before its update, which needs no peer: a process
      // that began its update holds the whole job at the next boundary once it ends
      // (docs/design/recovery.md).
      const auto c0 = Clock::now();
      const double lr = optim::learningRate(plan_.schedule, step);
      applyRankZeroBuffers();
      const train::BatchStats local = round_->localStats();
      const train::BatchStats global = train::allreduceStats(local, *host_);
      if (observer) observer->beforeUpdate(*this);
      const auto c1 = Clock::now();
      std::optional<double> gradNorm;
      const auto update = [&] {
        // Clipping is part of the update: local arithmetic on the reduced gradient, which every
        // process holds whole, so every placement computes the same norm. A second run of the
        // update (recovery) clips a clipped gradient: a factor of exactly 1.
        if (config_.clipGradNorm > 0) {
          gradNorm = backend_->clipGradients(config_.clipGradNorm);
          if (!std::isfinite(*gradNorm)) {  // every process holds the same norm: the lead says it
            throw JobWideInputError(
                str("step ", step + 1, ": the gradient's global norm is ", *gradNorm,
                    ", which --clip-grad-norm cannot clip; the job stops before applying it (a lower --lr, or "
                    "--reduction exact, which names a non-finite gradient's parameter, may help)"),
                lead());
          }
        }
        backend_->optimizerStep(lr);
        markUpdated();
        if (updateDelayMs_ > 0)
          std::this_thread::sleep_for(std::chrono::milliseconds(updateDelayMs_));
        ++stepsDone_;
      };
      if (observer) {
        observer->runUpdate(*this, update);
      } else {
        update();
      }
      const auto c2 = Clock::now();

      StepRecord s;
      s.stepsDone = stepsDone_;
      s.lr = lr;
      s.gradNorm = gradNorm;
      s.global = global;
      s.computeSeconds = secondsBetween(c1, c2) + round_->computeSeconds();
      lastComputePerEst_ = local_.empty() ? 0.0 : round_->computeSeconds() / double(local_.size());
      bytesPerEst_ = round_->bytesPerEst();
      s.commSeconds = reduceSeconds + secondsBetween(c0, c1);
      s.stepSeconds = secondsBetween(t0, c2);
      s.overlap = backend_->overlap();
      lastSplit_ = StepSplit{secondsBetween(r0, t0), loaderStats().waitSeconds - waitBefore, s.computeSeconds,
                             s.commSeconds, secondsBetween(r0, c2)};
      record.recordStep(s, lead());
      if (trace_) {
        trace_->endStep(traced);
        traceWritten();
      }
      if (validation.due(stepsDone_) && data_.test) validation.validate(stepsDone_, score, save, metrics, lead());
      if (stepBoundary(observer, s.computeSeconds, local.samples, record.result()) == StepAction::Stop) break;
    }
  } catch (...) {
    endRound();
    if (trace_) trace_->abandon();
    throw;
  }
  if (trace_) {
    trace_->finish();  // the run ended inside the traced steps (a rescale, or the job's end)
    traceWritten();
  }
  train::TrainResult result = record.finish(stepsDone_, lead(), inJob());
  const data::LoaderStats ls = loaderStats();
  endRound();
  result.paramsSha256 = train::paramsSha256(*replica_->model);
  if (const auto& best = validation.best()) {
    result.hasBest = true;
    result.bestStep = best->step;
    result.bestValLoss = best->valLoss;
  }
  result.loaderWorkers = ls.workers;
  result.loaderBusySeconds = ls.workerBusySeconds;
  result.loaderImages = ls.images;
  result.dataWaitSeconds = ls.waitSeconds;
  result.simulatedDevice = backend_->simulated();
  if (data_.trainImages) result.corruptSamples = data_.trainImages->corruptSamplesSkipped();
  return result;
}

// The local ESTs' fibers and loader, from their contexts' cursors.
void EstExecutor::startRound() {
  const int n = placement_.logicalWorkers();
  auto batches = std::make_unique<LocalBatches>(config_, data_.train, local_, n, stepsDone_, plan_.totalSteps);
  round_ = std::make_unique<LocalRound>(local_, n, replica_->device, std::move(batches), *backend_);
  round_->setSlowdown(slowdown_);
  if (tuner_) tuning_ = std::make_unique<LoaderTuningWindow>(*tuner_, round_->loader());
}

void EstExecutor::setEmulatedSlowdown(double factor) {
  slowdown_ = factor;
  if (round_) round_->setSlowdown(factor);
}

void EstExecutor::endRound() {
  if (!round_) return;
  retiredLoaders_ = loaderStats();  // the totals so far, this round's loader included
  tuning_.reset();
  round_.reset();
}

// Loader totals over this run (the current loader and those a layout change replaced).
data::LoaderStats EstExecutor::loaderStats() const {
  data::LoaderStats s = retiredLoaders_;
  if (!round_) return s;
  const data::LoaderStats now = round_->loader().stats();
  s.batches += now.batches;
  s.images += now.images;
  s.waitSeconds += now.waitSeconds;
  s.workerBusySeconds += now.workerBusySeconds;
  s.workers = now.workers;
  return s;
}

// All local ESTs compute the step from the same buffers; the reduction either finishes the
// mean gradient or asks for the whole round again (same batches, same generator states).
void EstExecutor::reduceOrReplay(int64_t epoch, double& seconds, train::TrainResult& result) {
  backend_->beginStep();
  round_->beginStep(epoch);
  for (bool replay = false;; replay = true) {
    backend_->beginRound();
    round_->run(replay);
    if (backend_->reduce(placement_.logicalWorkers(), seconds)) return;
    ++result.replays;
  }
}

// DDP buffer semantics: only EST 0's buffer updates survive; its owner broadcasts them.
void EstExecutor::applyRankZeroBuffers() {
  const int root = placement_.owner(0);
  backend_->applyRankZeroBuffers(root == host_->rank(), root);
}

// Loader tuning, then the observer (checkpoints, stop requests, layout changes).
StepAction EstExecutor::stepBoundary(StepObserver* observer, double computeSeconds, int64_t consumed,
                                     train::TrainResult& result) {
  if (tuning_ && tuning_->afterStep(computeSeconds, consumed, lead())) ++result.loaderResizes;
  if (!observer) return StepAction::Continue;
  return observer->afterStep(stepsDone_, *this);
}

}  // namespace tl::est
