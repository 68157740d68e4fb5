#include "est/run_recorder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

namespace tl::est {

using Clock = EpochTimers::Clock;

RunRecorder::RunRecorder(const JobConfig& config, const train::StepPlan& plan, train::MetricsLog& metrics,
                         Evaluate evaluate, int64_t firstStep)
    : config_(config), plan_(plan), metrics_(metrics), evaluate_(std::move(evaluate)), firstStep_(firstStep) {
  result_.hasAccuracy = !config.model.returnsLoss;
  result_.hasPerplexity = config.model.returnsLoss && config.dataset == "tokens";
}

void RunRecorder::beginStep(int64_t epoch, Clock::time_point t0, bool lead) {
  if (epoch == currentEpoch_) return;
  if (currentEpoch_ >= 0) closeEpoch(epoch_.steps < plan_.stepsPerEpoch, lead, true);
  currentEpoch_ = epoch;
  epoch_.start = t0;
}

void RunRecorder::dataWaitSoFar(double waitSeconds) {
  epoch_.dataWait += waitSeconds - lastWait_;
  lastWait_ = waitSeconds;
}

void RunRecorder::recordStep(const StepRecord& s, bool lead) {
  epoch_.compute += s.computeSeconds;
  epoch_.comm += s.commSeconds;
  epoch_.stats.add(s.global);
  ++epoch_.steps;
  imagesSeen_ += s.global.samples;
  result_.finalLoss = s.global.meanLoss();
  result_.computeSeconds += s.computeSeconds;
  const double ips = s.stepSeconds > 0 ? double(s.global.samples) / s.stepSeconds : 0;
  // Made on every process: a survivor that takes over from a lost lead logs the step the lead
  // did not (MetricsLog::noteStep).
  nlohmann::json record = {{"type", "step"}, {"step", s.stepsDone}, {"epoch", currentEpoch_},
                           {"loss", s.global.meanLoss()}, {"lr", s.lr},
                           {"images_per_s", ips}, {"data_wait_s", epoch_.dataWait},
                           {"replays", result_.replays},
                           {"time", std::chrono::duration<double>(
                                        std::chrono::system_clock::now().time_since_epoch()).count()}};
  // A module returning its own loss has no class scores: no accuracy, not a misleading 0.
  if (result_.hasAccuracy) record["acc"] = s.global.accuracy();
  if (s.gradNorm) record["grad_norm"] = *s.gradNorm;
  if (s.overlap) {
    // This process's view: of its buckets, how many started while its last EST's backward ran.
    record["overlap_buckets"] = s.overlap->buckets;
    record["overlap_buckets_during_backward"] = s.overlap->startedDuringBackward;
    record["overlap_lead_s"] = s.overlap->leadSeconds;
  }
  metrics_.noteStep(record);
  if (!lead) return;
  metrics_.write(record);
  if (config_.logEvery > 0 && (s.stepsDone % config_.logEvery == 0 || s.stepsDone == plan_.totalSteps)) {
    const std::string acc = result_.hasAccuracy ? fmt::format(" acc {:.3f}", s.global.accuracy()) : "";
    spdlog::info("step {}/{} epoch {} loss {:.4f}{} lr {:.4g} {:.1f} {}/s", s.stepsDone, plan_.totalSteps,
                 currentEpoch_, s.global.meanLoss(), acc, s.lr, ips,
                 config_.dataset == "tokens" || config_.dataset == "tensors" ? "samples" : "images");
  }
}

void RunRecorder::closeEpoch(bool partial, bool lead, bool collectives) {
  train::EpochSummary e;
  e.epoch = currentEpoch_;
  e.steps = epoch_.steps;
  e.partial = partial;
  e.hasAccuracy = result_.hasAccuracy;
  e.hasPerplexity = result_.hasPerplexity;
  e.dataWaitSeconds = epoch_.dataWait;
  e.computeSeconds = epoch_.compute;
  e.commSeconds = epoch_.comm;
  e.meanLoss = epoch_.stats.meanLoss();
  e.trainAccuracy = epoch_.stats.accuracy();
  if (config_.eval && collectives && evaluate_) {
    train::EvalOptions eo;
    eo.batch = std::max<int64_t>(config_.batch, 256);
    eo.workers = config_.workers;
    train::BatchStats t = evaluate_(eo);
    e.evaluated = true;
    e.testLoss = t.meanLoss();
    e.testAccuracy = t.accuracy();
  }
  e.totalSeconds = secondsBetween(epoch_.start, Clock::now());
  e.imagesPerSecond = e.totalSeconds > 0 ? double(epoch_.stats.samples) / e.totalSeconds : 0;
  if (lead) {
    if (result_.epochs.empty()) spdlog::info("{}", train::epochTableHeader());
    spdlog::info("{}", train::epochTableRow(e));
    metrics_.write(train::toJson(e));
  }
  result_.epochs.push_back(e);
  epoch_ = EpochTimers{};
}

train::TrainResult RunRecorder::finish(int64_t stepsDone, bool lead, bool collectives) {
  if (currentEpoch_ >= 0) {
    closeEpoch(epoch_.steps < plan_.stepsPerEpoch, lead, collectives);
  } else if (config_.eval && collectives && evaluate_) {
    train::BatchStats t = evaluate_(train::EvalOptions{});
    result_.evaluated = true;
    result_.testLoss = t.meanLoss();
    result_.testAccuracy = t.accuracy();
  }
  result_.steps = stepsDone;
  result_.epochsCompleted = stepsDone / plan_.stepsPerEpoch;
  result_.stepsThisRun = stepsDone - firstStep_;
  result_.wallSeconds = secondsBetween(runStart_, Clock::now());
  result_.imagesPerSecond = result_.wallSeconds > 0 ? double(imagesSeen_) / result_.wallSeconds : 0;
  if (!result_.epochs.empty()) {
    const auto& last = result_.epochs.back();
    result_.trainAccuracy = last.trainAccuracy;
    if (last.evaluated) {
      result_.evaluated = true;
      result_.testAccuracy = last.testAccuracy;
      result_.testLoss = last.testLoss;
    }
  }
  return result_;
}

}  // namespace tl::est
