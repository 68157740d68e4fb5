// EstExecutor::run: the step loop. Local ESTs run as fibers, one after another in logical-rank
// order; the main fiber reduces, steps the optimizer and handles the step boundary.
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <exception>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "dataload/loader.h"
#include "est/executor.h"
#include "est/fiber_scheduler.h"
#include "est/step_timers.h"
#include "runtime/train/evaluate.h"
#include "runtime/train/step.h"

namespace tl::est {
namespace {

using Clock = EpochTimers::Clock;

// Hand-over between the main fiber and the EST fibers. A "round" is one pass of every local
// EST over its micro-batch: a step, or a replay of it when the reduction asks. Each fiber has
// its own condition variable, so a round wakes each fiber exactly once (k + 1 switches).
struct StepSync {
  explicit StepSync(int k) : estTurn(k) {}
  boost::fibers::mutex mutex;
  std::vector<boost::fibers::condition_variable> estTurn;
  boost::fibers::condition_variable mainTurn;
  int64_t round = 0;
  bool replay = false;
  int turn = 0;  // local index of the EST allowed to compute; k: the main fiber's turn
  bool stop = false;
  std::exception_ptr error;

  // Passes the turn to the next fiber in order (the main fiber after the last EST).
  void passTurn(int k) {
    ++turn;
    if (turn < k) estTurn[turn].notify_one();
    else mainTurn.notify_one();
  }
};

std::vector<at::Tensor> cloneAll(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.detach().clone());
  return out;
}

void copyInto(std::vector<at::Tensor> dst, const std::vector<at::Tensor>& src) {
  at::NoGradGuard noGrad;
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
}

at::Tensor cpuGeneratorState() {
  at::Generator gen = at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void setCpuGeneratorState(const at::Tensor& state) {
  at::Generator gen = at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace

train::TrainResult EstExecutor::run(train::MetricsLog& metrics, StepObserver* observer) {
  const bool lead = comm_.rank() == 0;
  const int k = int(local_.size());
  const int n = placement_.logicalWorkers();
  const int bufferRoot = placement_.owner(0);
  const bool ownsRankZero = placement_.owner(0) == comm_.rank();
  const int64_t total = plan_.totalSteps;
  const auto runStart = Clock::now();
  const int64_t datasetSize = data_.train->dataset().size();

  if (stepsDone_ == 0) train::broadcastState(*model_, deviceComm_, bufferRoot);

  // Every local EST reads its own shard; one loader serves them interleaved in EST order.
  auto makeStream = [&](const EstContext& c) {
    data::SamplerOptions so;
    so.datasetSize = datasetSize;
    so.numReplicas = n;
    so.rank = c.logicalRank;
    so.seed = config_.seed;
    return data::BatchStream(data::DistributedSampler(so), config_.batch, config_.dropLastBatch, c.cursor);
  };
  struct PlanState {
    std::vector<data::BatchStream> streams;
    std::vector<int> ranks;
    size_t next = 0;
    int64_t stepsPlanned = 0;
  };
  auto planState = std::make_shared<PlanState>();
  std::vector<data::BatchStream> consumed;  // advance as batches are used: the saved cursors
  for (const auto& c : local_) {
    planState->streams.push_back(makeStream(c));
    planState->ranks.push_back(c.logicalRank);
    consumed.push_back(makeStream(c));
  }
  planState->stepsPlanned = stepsDone_;
  data::Loader loader(
      data_.train,
      [planState, total]() -> std::optional<data::BatchRequest> {
        if (planState->stepsPlanned >= total) return std::nullopt;
        size_t i = planState->next;
        data::BatchRequest r = planState->streams[i].next();
        r.tag = planState->ranks[i];
        if (++planState->next == planState->streams.size()) {
          planState->next = 0;
          ++planState->stepsPlanned;
        }
        return r;
      },
      data::LoaderOptions{config_.workers, config_.prefetch});

  StepSync sync(k);
  std::vector<train::BatchStats> estStats(k);
  std::vector<double> estCompute(k, 0.0);
  std::vector<at::Tensor> buffersAtStepStart, buffersOfRankZero;
  int64_t batchEpoch = -1;

  std::vector<EstContext*> byRank(n, nullptr);
  for (auto& c : local_) byRank[c.logicalRank] = &c;
  GeneratorSwitcher switcher(byRank, device_);
  EstFibers fibers(switcher);

  for (int i = 0; i < k; ++i) {
    fibers.launch(local_[i].logicalRank, [&, i] {
      EstContext& ctx = local_[i];
      int64_t myRound = 0;
      std::optional<data::Batch> batch;
      at::Tensor images, labels, rngAtStepStart;
      while (true) {
        bool replay;
        {
          std::unique_lock<boost::fibers::mutex> lock(sync.mutex);
          sync.estTurn[i].wait(lock, [&] { return sync.stop || (sync.round > myRound && sync.turn == i); });
          if (sync.stop) return;
          myRound = sync.round;
          replay = sync.replay;
        }
        try {
          if (!replay) {
            batch = loader.next();
            TL_CHECK(batch.has_value(), "loader ran dry at step ", stepsDone_);
            TL_CHECK_EQ(batch->request.tag, int64_t(ctx.logicalRank), "batch handed to the wrong EST");
            consumed[i].next();
            ctx.cursor = consumed[i].cursor();
            if (i == 0) batchEpoch = batch->request.epoch;
            images = batch->images.to(device_);
            labels = batch->labels.to(device_);
            rngAtStepStart = cpuGeneratorState();
          } else {
            setCpuGeneratorState(rngAtStepStart);  // the replay must draw the same dropout masks
          }
          auto t0 = Clock::now();
          if (simRate_ > 0) {
            // A stand-in device: busy for batch/RATE seconds without using a core.
            std::this_thread::sleep_for(std::chrono::duration<double>(double(labels.size(0)) / simRate_));
            estStats[i] = train::BatchStats{0.0, 0, labels.size(0)};
            estCompute[i] += secondsBetween(t0, Clock::now());
          } else {
            // DDP broadcasts rank 0's buffers before every forward: each EST starts from them.
            copyInto(model_->buffers(), buffersAtStepStart);
            t0 = Clock::now();
            estStats[i] = train::forwardBackward(*model_, images, labels);
            estCompute[i] += secondsBetween(t0, Clock::now());
            if (ctx.logicalRank == 0) buffersOfRankZero = cloneAll(model_->buffers());
            reducer_->addContribution(train::gradients(*model_));
          }
        } catch (...) {
          sync.error = std::current_exception();
        }
        std::unique_lock<boost::fibers::mutex> lock(sync.mutex);
        if (sync.error) {
          sync.turn = k;  // skip the remaining ESTs: the main fiber ends the run
          sync.mainTurn.notify_one();
        } else {
          sync.passTurn(k);
        }
      }
    });
  }

  auto stopFibers = [&] {
    {
      std::unique_lock<boost::fibers::mutex> lock(sync.mutex);
      sync.stop = true;
      for (auto& cv : sync.estTurn) cv.notify_one();
    }
    fibers.joinAll();
  };

  train::TrainResult result;
  EpochTimers epoch;
  int64_t currentEpoch = -1;
  double lastWait = loader.stats().waitSeconds;
  int64_t imagesSeen = 0;
  const int64_t firstStep = stepsDone_;

  auto closeEpoch = [&](bool partial) {
    train::EpochSummary e;
    e.epoch = currentEpoch;
    e.steps = epoch.steps;
    e.partial = partial;
    e.dataWaitSeconds = epoch.dataWait;
    e.computeSeconds = epoch.compute;
    e.commSeconds = epoch.comm;
    e.meanLoss = epoch.stats.meanLoss();
    e.trainAccuracy = epoch.stats.accuracy();
    if (config_.eval && data_.test) {
      train::EvalOptions eo;
      eo.batch = std::max<int64_t>(config_.batch, 256);
      eo.workers = config_.workers;
      eo.device = device_;
      train::BatchStats t = train::evaluate(*model_, data_.test, comm_, eo);
      e.evaluated = true;
      e.testLoss = t.meanLoss();
      e.testAccuracy = t.accuracy();
    }
    e.totalSeconds = secondsBetween(epoch.start, Clock::now());
    e.imagesPerSecond = e.totalSeconds > 0 ? double(epoch.stats.samples) / e.totalSeconds : 0;
    if (lead) {
      if (result.epochs.empty()) spdlog::info("{}", train::epochTableHeader());
      spdlog::info("{}", train::epochTableRow(e));
      metrics.write(train::toJson(e));
    }
    result.epochs.push_back(e);
    epoch = EpochTimers{};
  };

  // --workers auto: report measurement windows of about a second, apply new pool sizes.
  struct TuningWindow {
    Clock::time_point start = Clock::now();
    double compute = 0;
    int64_t consumed = 0;
    data::LoaderStats loaderAtStart;
    double waitAtStart = 0;
  } window;
  window.loaderAtStart = loader.stats();
  auto tuneLoader = [&](double computeSeconds, int64_t consumed) {
    window.compute += computeSeconds;
    window.consumed += consumed;
    if (secondsBetween(window.start, Clock::now()) >= 1.0) {
      data::LoaderStats now = loader.stats();
      tuning::LoaderObservation lo;
      lo.workers = now.workers;
      lo.busySeconds = now.workerBusySeconds - window.loaderAtStart.workerBusySeconds;
      lo.images = now.images - window.loaderAtStart.images;
      tuner_->report(lo, tuning::ComputeObservation{window.compute, window.consumed},
                     now.waitSeconds - window.loaderAtStart.waitSeconds);
      window = TuningWindow{};
      window.loaderAtStart = now;
    }
    if (auto w = tuner_->pendingWorkers(); w && *w != loader.workers()) {
      if (lead) spdlog::info("loader workers {} -> {} (node coordinator)", loader.workers(), *w);
      loader.setWorkers(*w);
      ++result.loaderResizes;
      window.loaderAtStart = loader.stats();  // a window measures one pool size
      window.start = Clock::now();
      window.compute = 0;
      window.consumed = 0;
    }
  };

  try {
    bool stopRequested = false;
    while (stepsDone_ < total && !stopRequested) {
      const int64_t step = stepsDone_;
      const auto t0 = Clock::now();
      buffersAtStepStart = cloneAll(model_->buffers());
      std::fill(estCompute.begin(), estCompute.end(), 0.0);
      double reduceSeconds = 0;
      bool replay = false;
      while (true) {
        reducer_->beginStep();
        std::unique_lock<boost::fibers::mutex> lock(sync.mutex);
        ++sync.round;
        sync.replay = replay;
        sync.turn = 0;
        sync.estTurn[0].notify_one();
        sync.mainTurn.wait(lock, [&] { return sync.turn == k; });
        if (sync.error) std::rethrow_exception(sync.error);
        lock.unlock();
        if (simRate_ > 0) break;
        auto r0 = Clock::now();
        auto grads = train::gradients(*model_);
        bool done = reducer_->finish(grads, n);
        reduceSeconds += secondsBetween(r0, Clock::now());
        if (done) break;
        replay = true;
        ++result.replays;
      }
      if (batchEpoch != currentEpoch) {
        if (currentEpoch >= 0) closeEpoch(epoch.steps < plan_.stepsPerEpoch);
        currentEpoch = batchEpoch;
        epoch.start = t0;
      }
      double waited = loader.stats().waitSeconds;
      epoch.dataWait += waited - lastWait;
      lastWait = waited;

      auto c0 = Clock::now();
      const double lr = optim::learningRate(plan_.schedule, step);
      if (simRate_ == 0) {
        if (ownsRankZero) copyInto(model_->buffers(), buffersOfRankZero);
        train::broadcastBuffers(*model_, deviceComm_, bufferRoot);
      }
      auto c1 = Clock::now();
      if (simRate_ == 0) optimizer_->step(lr);
      auto c2 = Clock::now();
      train::BatchStats local;
      for (const auto& s : estStats) local.add(s);
      train::BatchStats global = train::allreduceStats(local, comm_);
      auto c3 = Clock::now();
      ++stepsDone_;

      double computeSeconds = secondsBetween(c1, c2);
      for (double s : estCompute) computeSeconds += s;
      epoch.compute += computeSeconds;
      epoch.comm += reduceSeconds + secondsBetween(c0, c1) + secondsBetween(c2, c3);
      epoch.stats.add(global);
      ++epoch.steps;
      imagesSeen += global.samples;
      result.finalLoss = global.meanLoss();
      const double stepSeconds = secondsBetween(t0, c3);
      const double ips = stepSeconds > 0 ? double(global.samples) / stepSeconds : 0;
      if (lead) {
        metrics.write({{"type", "step"}, {"step", stepsDone_}, {"epoch", currentEpoch},
                       {"loss", global.meanLoss()}, {"acc", global.accuracy()}, {"lr", lr},
                       {"images_per_s", ips}, {"data_wait_s", epoch.dataWait},
                       {"replays", result.replays},
                       {"time", std::chrono::duration<double>(
                                    std::chrono::system_clock::now().time_since_epoch()).count()}});
        if (config_.logEvery > 0 && (stepsDone_ % config_.logEvery == 0 || stepsDone_ == total)) {
          spdlog::info("step {}/{} epoch {} loss {:.4f} acc {:.3f} lr {:.4g} {:.1f} images/s", stepsDone_,
                       total, currentEpoch, global.meanLoss(), global.accuracy(), lr, ips);
        }
      }
      result.computeSeconds += computeSeconds;
      if (tuner_) tuneLoader(computeSeconds, local.samples);
      if (observer && observer->afterStep(stepsDone_, *this) == StepAction::Stop) stopRequested = true;
    }
  } catch (...) {
    stopFibers();
    throw;
  }
  stopFibers();

  if (currentEpoch >= 0) {
    closeEpoch(epoch.steps < plan_.stepsPerEpoch);
  } else if (config_.eval && data_.test) {
    train::EvalOptions eo;
    eo.device = device_;
    train::BatchStats t = train::evaluate(*model_, data_.test, comm_, eo);
    result.evaluated = true;
    result.testLoss = t.meanLoss();
    result.testAccuracy = t.accuracy();
  }
  result.steps = stepsDone_;
  result.epochsCompleted = stepsDone_ / plan_.stepsPerEpoch;
  result.stepsThisRun = stepsDone_ - firstStep;
  result.wallSeconds = secondsBetween(runStart, Clock::now());
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
  result.paramsSha256 = train::paramsSha256(*model_);
  data::LoaderStats ls = loader.stats();
  result.loaderWorkers = ls.workers;
  result.loaderBusySeconds = ls.workerBusySeconds;
  result.loaderImages = ls.images;
  result.dataWaitSeconds = ls.waitSeconds;
  result.simulatedDevice = simRate_ > 0;
  result.corruptSamples = data_.train->dataset().corruptSamplesSkipped();
  return result;
}

}  // namespace tl::est
