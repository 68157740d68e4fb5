#include "est/local_round.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/check.h"

namespace tl::est {

LocalRound::LocalRound(std::vector<EstContext>& local, int logicalWorkers, c10::Device device,
                       std::unique_ptr<LocalBatches> batches, StepBackend& backend)
    : local_(local),
      device_(device),
      batches_(std::move(batches)),
      backend_(backend),
      sync_(int(local.size())),
      stats_(local.size()),
      compute_(local.size(), 0.0),
      estBytes_(local.size(), 0.0) {
  std::vector<EstContext*> byRank(size_t(logicalWorkers), nullptr);
  for (auto& c : local_) byRank.at(size_t(c.logicalRank)) = &c;
  switcher_ = std::make_unique<GeneratorSwitcher>(byRank, device_);
  fibers_ = std::make_unique<EstFibers>(*switcher_);
  for (int i = 0; i < int(local_.size()); ++i) fibers_->launch(local_[size_t(i)].logicalRank, [this, i] { estBody(i); });
}

LocalRound::~LocalRound() {
  sync_.stopAll();
  fibers_->joinAll();
}

namespace {

// A batch to the device. From pageable memory a copy to a GPU first waits for everything queued
// on the stream; from pinned memory it is queued behind it instead (the caching host allocator
// keeps the pinned block until the copy is done).
at::Tensor toDevice(const at::Tensor& t, const c10::Device& device) {
  if (!device.is_cuda()) return t.to(device);
  return t.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace

void LocalRound::estBody(int i) {
  EstContext& ctx = local_[size_t(i)];
  int64_t myRound = 0;
  bool replay = false;
  std::optional<data::Batch> batch;
  at::Tensor images, labels;
  GeneratorStates atStepStart;
  while (sync_.awaitTurn(i, myRound, replay)) {
    std::exception_ptr error;
    try {
      if (!replay) {
        batch = batches_->next(i, ctx);
        TL_CHECK_EQ(batch->request.epoch, epoch_, "EST ", ctx.logicalRank, " read a batch of another epoch");
        images = toDevice(batch->images, device_);
        labels = toDevice(batch->labels, device_);
        atStepStart = GeneratorStates::capture(device_);
      } else {
        atStepStart.install(device_);  // the replay must draw the same dropout masks
      }
      const double before = compute_[size_t(i)];
      const bool last = i + 1 == int(local_.size());
      stats_[size_t(i)] = backend_.computeEst(ctx.logicalRank, last, images, labels, compute_[size_t(i)]);
      if (slowdown_ > 1) {
        const auto s0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(std::chrono::duration<double>((slowdown_ - 1) * (compute_[size_t(i)] - before)));
        compute_[size_t(i)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
      }
      estBytes_[size_t(i)] = double(images.nbytes() + labels.nbytes() + ctx.cpuRngState.nbytes() +
                                    (ctx.deviceRngState.defined() ? ctx.deviceRngState.nbytes() : 0));
    } catch (...) {
      error = std::current_exception();
    }
    sync_.endTurn(error);
  }
}

void LocalRound::beginStep(int64_t epoch) {
  epoch_ = epoch;
  std::fill(compute_.begin(), compute_.end(), 0.0);
}

void LocalRound::run(bool replay) { sync_.runRound(replay); }

train::BatchStats LocalRound::localStats() const {
  std::vector<train::BatchStats> each = stats_;
  train::resolvePending(each);  // on a GPU: the step's one read of the losses
  train::BatchStats s;
  for (const auto& e : each) s.add(e);
  return s;
}

double LocalRound::computeSeconds() const {
  double s = 0;
  for (double c : compute_) s += c;
  return s;
}

double LocalRound::bytesPerEst() const {
  return estBytes_.empty() ? 0.0 : *std::max_element(estBytes_.begin(), estBytes_.end());
}

}  // namespace tl::est
