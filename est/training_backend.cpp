// Real training: the order of operations here is part of the job's bits (buffers reset before
// each EST's forward, EST 0's buffers kept, one reduction, then the optimizer).
#include <ATen/ATen.h>

#include <vector>

#include "est/step_backend.h"
#include "est/step_timers.h"

namespace tl::est {
namespace {

using Clock = EpochTimers::Clock;

std::vector<at::Tensor> cloneAll(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(t.detach().clone());
  return out;
}

void copyInto(std::vector<at::Tensor> dst, const std::vector<at::Tensor>& src) {
  at::NoGradGuard noGrad;
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
}

class TrainingBackend final : public StepBackend {
 public:
  explicit TrainingBackend(Replica& replica) : r_(replica) {}

  bool simulated() const override { return false; }

  void beginStep() override { buffersAtStepStart_ = cloneAll(r_.model->buffers()); }

  void beginRound() override { r_.reducer->beginStep(); }

  train::BatchStats computeEst(int logicalRank, const at::Tensor& images, const at::Tensor& labels,
                               double& computeSeconds) override {
    // DDP broadcasts rank 0's buffers before every forward: each EST starts from them.
    copyInto(r_.model->buffers(), buffersAtStepStart_);
    const auto t0 = Clock::now();
    train::BatchStats stats = train::forwardBackward(*r_.model, images, labels);
    computeSeconds += secondsBetween(t0, Clock::now());
    if (logicalRank == 0) buffersOfRankZero_ = cloneAll(r_.model->buffers());
    r_.reducer->addContribution(train::gradients(*r_.model));
    return stats;
  }

  bool reduce(int logicalWorkers, double& seconds) override {
    const auto t0 = Clock::now();
    auto grads = train::gradients(*r_.model);
    const bool done = r_.reducer->finish(grads, logicalWorkers);
    seconds += secondsBetween(t0, Clock::now());
    return done;
  }

  void applyRankZeroBuffers(bool ownsRankZero, int root) override {
    if (ownsRankZero) copyInto(r_.model->buffers(), buffersOfRankZero_);
    train::broadcastBuffers(*r_.model, *r_.deviceComm, root);
  }

  void optimizerStep(double lr) override { r_.optimizer->step(lr); }

 private:
  Replica& r_;
  std::vector<at::Tensor> buffersAtStepStart_, buffersOfRankZero_;
};

}  // namespace

std::unique_ptr<StepBackend> createTrainingBackend(Replica& replica) {
  return std::make_unique<TrainingBackend>(replica);
}

}  // namespace tl::est
