#include "runtime/train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "dataload/sampler.h"
#include "runtime/train/evaluate.h"
#include "runtime/train/step.h"

namespace tl::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Time spent in each part of a step, accumulated over an epoch.
struct EpochTimers {
  double dataWait = 0, compute = 0, comm = 0;
  Clock::time_point start = Clock::now();
  BatchStats stats;
  int64_t steps = 0;
};

}  // namespace

c10::Device resolveDevice(const JobConfig& config) {
  if (config.device == "cpu") return c10::Device(c10::kCPU);
  if (!torch::cuda::is_available()) {
    inputError("--device cuda: no CUDA device is available (this libtorch has no CUDA support, "
               "or no GPU is visible to this process)");
  }
  int64_t count = int64_t(torch::cuda::device_count());
  TL_REQUIRE(config.deviceIndex < count, "--device cuda: this process needs GPU ",
             config.deviceIndex, " but only ", count, " are visible");
  return c10::Device(c10::kCUDA, c10::DeviceIndex(config.deviceIndex));
}

StepPlan planSteps(const JobConfig& config, int64_t stepsPerEpoch) {
  StepPlan p;
  p.stepsPerEpoch = stepsPerEpoch;
  TL_REQUIRE(stepsPerEpoch > 0, "--batch ", config.batch,
             " leaves no full batch per worker in an epoch (use a smaller batch or keep the last short batch)");
  p.totalSteps = config.steps > 0 || config.epochs == 0 ? config.steps : config.epochs * stepsPerEpoch;
  const auto& s = config.schedule;
  p.schedule.kind = s.kind;
  p.schedule.baseLr = config.optimizer.lr;
  p.schedule.gamma = s.gamma;
  p.schedule.minLr = s.minLr;
  p.schedule.stepSize = std::max<int64_t>(1, std::llround(s.stepEpochs * double(stepsPerEpoch)));
  p.schedule.warmupSteps = std::llround(s.warmupEpochs * double(stepsPerEpoch));
  p.schedule.totalSteps = std::max<int64_t>(1, p.totalSteps - p.schedule.warmupSteps);
  optim::validate(p.schedule);
  return p;
}

DataParallelTrainer::DataParallelTrainer(JobConfig config, comm::Communicator& comm,
                                         comm::Communicator& deviceComm)
    : config_(std::move(config)), comm_(comm), deviceComm_(deviceComm), device_(c10::kCPU) {
  validate(config_);
  device_ = resolveDevice(config_);
  at::set_num_threads(config_.computeThreads);
  data_ = openJobData(config_);
  adaptModelToData(config_, data_.train->dataset());

  torch::manual_seed(config_.seed);
  model_ = models::createModel(config_.model);
  model_->to(device_);
  model_->train();
  optimizer_ = optim::createOptimizer(config_.optimizer, model_->parameters());
  TL_REQUIRE(config_.reduction == "fp32", "--reduction ", config_.reduction,
             ": only fp32 is available in DDP mode");
  reducer_ = reduce::createFp32Reducer(deviceComm_, model_->parameters(), config_.bucketBytes);

  data::SamplerOptions so;
  so.datasetSize = data_.train->dataset().size();
  so.numReplicas = comm_.size();
  so.rank = comm_.rank();
  so.seed = config_.seed;
  data::BatchStream probe(data::DistributedSampler(so), config_.batch, config_.dropLastBatch);
  plan_ = planSteps(config_, probe.batchesPerEpoch());
}

DataParallelTrainer::~DataParallelTrainer() = default;

TrainResult DataParallelTrainer::run(MetricsLog& metrics) {
  const bool lead = comm_.rank() == 0;
  const auto runStart = Clock::now();
  broadcastState(*model_, deviceComm_, 0);

  data::SamplerOptions so;
  so.datasetSize = data_.train->dataset().size();
  so.numReplicas = comm_.size();
  so.rank = comm_.rank();
  so.seed = config_.seed;
  auto stream = std::make_shared<data::BatchStream>(data::DistributedSampler(so), config_.batch,
                                                    config_.dropLastBatch);
  auto planned = std::make_shared<int64_t>(0);
  const int64_t total = plan_.totalSteps;
  data::Loader loader(
      data_.train,
      [stream, planned, total]() -> std::optional<data::BatchRequest> {
        if (*planned >= total) return std::nullopt;
        ++*planned;
        return stream->next();
      },
      data::LoaderOptions{config_.workers, config_.prefetch});

  TrainResult result;
  EpochTimers epoch;
  int64_t currentEpoch = -1;
  double lastWait = 0;
  int64_t imagesSeen = 0;

  auto closeEpoch = [&](bool partial) {
    EpochSummary e;
    e.epoch = currentEpoch;
    e.steps = epoch.steps;
    e.partial = partial;
    e.dataWaitSeconds = epoch.dataWait;
    e.computeSeconds = epoch.compute;
    e.commSeconds = epoch.comm;
    e.meanLoss = epoch.stats.meanLoss();
    e.trainAccuracy = epoch.stats.accuracy();
    if (config_.eval && data_.test) {
      EvalOptions eo;
      eo.batch = std::max<int64_t>(config_.batch, 256);
      eo.workers = config_.workers;
      eo.device = device_;
      BatchStats t = evaluate(*model_, data_.test, comm_, eo);
      e.evaluated = true;
      e.testLoss = t.meanLoss();
      e.testAccuracy = t.accuracy();
    }
    e.totalSeconds = seconds(epoch.start, Clock::now());
    e.imagesPerSecond = e.totalSeconds > 0 ? double(epoch.stats.samples) / e.totalSeconds : 0;
    if (lead) {
      if (result.epochs.empty()) spdlog::info("{}", epochTableHeader());
      spdlog::info("{}", epochTableRow(e));
      metrics.write(toJson(e));
    }
    result.epochs.push_back(e);
    if (!partial) ++result.epochsCompleted;
    epoch = EpochTimers{};
  };

  for (int64_t step = 0; step < total; ++step) {
    auto t0 = Clock::now();
    std::optional<data::Batch> batch = loader.next();
    TL_CHECK(batch.has_value(), "loader ended before step ", step);
    double waited = loader.stats().waitSeconds;
    auto t1 = Clock::now();
    if (batch->request.epoch != currentEpoch) {
      if (currentEpoch >= 0) closeEpoch(false);
      currentEpoch = batch->request.epoch;
      epoch.start = t0;
    }
    epoch.dataWait += waited - lastWait;
    lastWait = waited;
    (void)t1;

    auto c0 = Clock::now();
    broadcastBuffers(*model_, deviceComm_, 0);
    auto c1 = Clock::now();
    at::Tensor images = batch->images.to(device_);
    at::Tensor labels = batch->labels.to(device_);
    BatchStats local = forwardBackward(*model_, images, labels);
    auto c2 = Clock::now();
    auto grads = gradients(*model_);
    reducer_->beginStep();
    reducer_->addContribution(grads);
    reducer_->finish(grads, comm_.size());
    auto c3 = Clock::now();
    const double lr = optim::learningRate(plan_.schedule, step);
    optimizer_->step(lr);
    auto c4 = Clock::now();
    BatchStats global = allreduceStats(local, comm_);
    auto c5 = Clock::now();

    epoch.compute += seconds(c1, c2) + seconds(c3, c4);
    epoch.comm += seconds(c0, c1) + seconds(c2, c3) + seconds(c4, c5);
    epoch.stats.add(global);
    ++epoch.steps;
    imagesSeen += global.samples;
    result.finalLoss = global.meanLoss();
    const double stepSeconds = seconds(t0, c5);
    const double ips = stepSeconds > 0 ? double(global.samples) / stepSeconds : 0;
    if (lead) {
      metrics.write({{"type", "step"}, {"step", step + 1}, {"epoch", currentEpoch},
                     {"loss", global.meanLoss()}, {"acc", global.accuracy()}, {"lr", lr},
                     {"images_per_s", ips}, {"data_wait_s", epoch.dataWait}});
      if (config_.logEvery > 0 && ((step + 1) % config_.logEvery == 0 || step + 1 == total)) {
        spdlog::info("step {}/{} epoch {} loss {:.4f} acc {:.3f} lr {:.4g} {:.1f} images/s",
                     step + 1, total, currentEpoch, global.meanLoss(), global.accuracy(), lr, ips);
      }
    }
  }
  if (currentEpoch >= 0) {
    bool partial = plan_.stepsPerEpoch > 0 && epoch.steps < plan_.stepsPerEpoch;
    closeEpoch(partial);
  } else if (config_.eval && data_.test) {
    EvalOptions eo;
    eo.device = device_;
    BatchStats t = evaluate(*model_, data_.test, comm_, eo);
    result.evaluated = true;
    result.testLoss = t.meanLoss();
    result.testAccuracy = t.accuracy();
  }

  result.steps = total;
  result.wallSeconds = seconds(runStart, Clock::now());
  result.imagesPerSecond = result.wallSeconds > 0 ? double(imagesSeen) / result.wallSeconds : 0;
  if (!result.epochs.empty()) {
    const auto& last = result.epochs.back();
    result.trainAccuracy = last.trainAccuracy;
    if (last.evaluated) {
      result.evaluated = true;
      result.testAccuracy = last.testAccuracy;
      result.testLoss = last.testLoss;
    }
  }
  result.paramsSha256 = paramsSha256(*model_);
  return result;
}

}  // namespace tl::train
