// Real training: the order of operations here is part of the job's bits (buffers reset before
// each EST's forward, EST 0's buffers kept, one reduction, then the optimizer).
//
// Overlap (--overlap on, with more than one process in the job): a post-hook on every parameter's
// gradient accumulator hands the parameter's final gradient of the round's last local EST to the
// reducer the moment autograd has accumulated it, so the reducer starts a bucket's collective
// while backward computes the earlier layers. On a CPU autograd runs the hooks on the training
// thread, which calls the reducer at once. On a GPU autograd runs them on its device thread while
// the training thread waits inside backward(): there backward runs on a helper thread and the hooks
// only queue the gradients, which the training thread hands to the reducer as they come
// (gradient_handoff.h gives the thread rule).
#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "est/gradient_handoff.h"
#include "est/step_backend.h"
#include "est/step_timers.h"
#include "runtime/foreach.h"
#include "runtime/optim/clip_grad_norm.h"
#include "runtime/train/step_trace.h"

namespace tl::est {
namespace {

using Clock = EpochTimers::Clock;

std::vector<at::Tensor> cloneAll(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(t.detach().clone());
  return out;
}

void copyInto(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src) {
  at::NoGradGuard noGrad;
  copyEach(dst, src);
}

// dst = a copy of src: into dst's own tensors when they match (one launch on a GPU instead of an
// allocation and a copy per buffer), else fresh clones.
void keepCopy(std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src) {
  bool match = dst.size() == src.size();
  for (size_t i = 0; i < dst.size() && match; ++i) {
    match = dst[i].sizes() == src[i].sizes() && dst[i].scalar_type() == src[i].scalar_type() &&
            dst[i].device() == src[i].device();
  }
  if (match) {
    copyInto(dst, src);
  } else {
    dst = cloneAll(src);
  }
}

class TrainingBackend;

// Calls back when autograd has accumulated parameter `index`'s gradient.
class GradientReady final : public torch::autograd::FunctionPostHook {
 public:
  GradientReady(TrainingBackend& backend, size_t index) : backend_(backend), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override;

 private:
  TrainingBackend& backend_;
  size_t index_;
};

class TrainingBackend final : public StepBackend {
 public:
  TrainingBackend(Replica& replica, bool overlap, bool backwardThread, int64_t microBatches)
      : r_(replica), thread_(std::this_thread::get_id()), backwardThread_(backwardThread), microBatches_(microBatches) {
    if (!overlap) return;
    params_ = r_.model->parameters();
    for (size_t t = 0; t < params_.size(); ++t) {
      if (!params_[t].requires_grad()) continue;
      // Held here: a variable keeps its accumulator only while a graph uses it, and the hook
      // must survive from one backward to the next.
      auto accumulator = torch::autograd::impl::grad_accumulator(params_[t]);
      hooks_.push_back(accumulator->add_post_hook(std::make_unique<GradientReady>(*this, t)));
      accumulators_.push_back(std::move(accumulator));
    }
  }

  ~TrainingBackend() override {
    for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hooks_[i]);
  }

  // From GradientReady, on whatever thread autograd runs it. Outside a hand-over only the
  // training thread may use the reducer; a gradient that reaches no one here goes in with
  // addContribution after backward.
  void gradientReady(size_t t) {
    if (!streaming_) return;
    if (handingOver_ != nullptr) {
      handingOver_->push(t, params_[t].grad());
    } else if (std::this_thread::get_id() == thread_) {
      r_.reducer->addGradient(t, params_[t].grad());
    }
  }

  bool simulated() const override { return false; }

  // The buffers at the step's start are kept (every EST's forward and a replay start from them);
  // the module holds them until the first EST runs.
  void beginStep() override {
    keepCopy(buffersAtStepStart_, r_.model->buffers());
    holds_ = Holds::StepStart;
  }

  void beginRound() override {
    r_.reducer->beginStep();
    streamed_ = false;
  }

  train::BatchStats computeEst(int logicalRank, bool lastLocal, const at::Tensor& images,
                               const at::Tensor& labels, double& computeSeconds) override {
    const train::TraceSpan span("tl::forward_backward");
    // DDP broadcasts rank 0's buffers before every forward: each EST starts from them. What the
    // module holds is copied only where needed: rank 0's updates before another EST overwrites
    // them, the step's start unless the module holds it already (one EST a step: no copy).
    if (holds_ == Holds::RankZero) keepCopy(buffersOfRankZero_, r_.model->buffers());
    if (holds_ != Holds::StepStart) copyInto(r_.model->buffers(), buffersAtStepStart_);
    holds_ = Holds::Other;  // until this EST's forward is known to have finished
    // Accumulating micro-batches: the gradient is whole after the last piece only. A job on one
    // process has no collective to hide behind backward (the reducers start none), so it
    // reduces after backward: no hand-over, and on a GPU backward stays on the training thread.
    const bool stream = lastLocal && !accumulators_.empty() && microBatches_ == 1 &&
                        r_.deviceComm != nullptr && r_.deviceComm->size() > 1;
    if (stream) r_.reducer->streamContribution();
    streamed_ = stream;
    GradientHandoff* handoff = stream ? handoffFor(r_.device) : nullptr;
    handingOver_ = handoff;  // before streaming_ turns true: the hooks' threads read it after
    const auto t0 = Clock::now();
    train::BatchStats stats;
    {
      StreamingScope scope(streaming_, stream);
      if (handoff) {
        stats = train::forwardBackward(*r_.model, images, labels, [&](const at::Tensor& loss) {
          handoff->run([&] { loss.backward(); },
                       [&](size_t t, const at::Tensor& grad) { r_.reducer->addGradient(t, grad); });
        });
      } else if (microBatches_ > 1) {
        stats = train::forwardBackwardInPieces(*r_.model, images, labels, microBatches_);
      } else {
        stats = train::forwardBackward(*r_.model, images, labels);
      }
    }
    const auto returned = Clock::now();
    backwardEnd_ = handoff ? handoff->backwardEnd() : returned;
    computeSeconds += secondsBetween(t0, returned);
    if (logicalRank == 0) holds_ = Holds::RankZero;
    r_.reducer->addContribution(train::gradients(*r_.model));
    return stats;
  }

  bool reduce(int logicalWorkers, double& seconds) override {
    const train::TraceSpan span("tl::reduce");
    const auto t0 = Clock::now();
    auto grads = train::gradients(*r_.model);
    const bool done = r_.reducer->finish(grads, logicalWorkers);
    seconds += secondsBetween(t0, Clock::now());
    return done;
  }

  void applyRankZeroBuffers(bool ownsRankZero, int root) override {
    if (ownsRankZero && holds_ != Holds::RankZero)
      copyInto(r_.model->buffers(), buffersOfRankZero_);
    holds_ = Holds::Other;
    train::broadcastBuffers(*r_.model, *r_.deviceComm, root);
  }

  void optimizerStep(double lr) override {
    const train::TraceSpan span("tl::optimizer");
    r_.optimizer->step(lr);
  }

  double clipGradients(double maxNorm) override {
    return optim::clipGradNorm(train::gradients(*r_.model), maxNorm).item<double>();
  }

  std::optional<OverlapFigures> overlap() const override {
    if (!streamed_) return std::nullopt;
    OverlapFigures f;
    const auto starts = r_.reducer->bucketStartTimes();
    f.buckets = int(starts.size());
    Clock::time_point first = Clock::time_point::max();
    for (const auto& t : starts) {
      if (t == Clock::time_point{}) continue;
      if (t < backwardEnd_) ++f.startedDuringBackward;
      first = std::min(first, t);
    }
    if (first < backwardEnd_) f.leadSeconds = secondsBetween(first, backwardEnd_);
    return f;
  }

 private:
  // streaming_ is true exactly while the streamed EST's forward and backward run, even if they throw.
  class StreamingScope {
   public:
    StreamingScope(std::atomic<bool>& flag, bool on) : flag_(flag) { flag_ = on; }
    ~StreamingScope() { flag_ = false; }

   private:
    std::atomic<bool>& flag_;
  };

  // The hand-over for gradients on `device`, when the hooks fire on another thread than this
  // one: a CUDA device's, or (backwardThread_, for tests) the CPU's. Null: the hooks call the
  // reducer themselves.
  GradientHandoff* handoffFor(c10::Device device) {
    if (!device.is_cuda() && !backwardThread_) return nullptr;
    if (!handoff_ || handoffDevice_ != device) {
      handoff_ = std::make_unique<GradientHandoff>(device);
      handoffDevice_ = device;
    }
    return handoff_.get();
  }

  Replica& r_;
  const std::thread::id thread_;  // the training thread
  const bool backwardThread_;
  const int64_t microBatches_;
  std::unique_ptr<GradientHandoff> handoff_;
  GradientHandoff* handingOver_ = nullptr;  // this EST's hooks queue to it (null: call the reducer)
  c10::Device handoffDevice_{c10::kCPU};
  std::vector<at::Tensor> params_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hooks_;
  std::atomic<bool> streaming_{false};  // a hook now streams its gradient (read by autograd's threads)
  bool streamed_ = false;   // this round's last EST streamed
  Clock::time_point backwardEnd_;
  std::vector<at::Tensor> buffersAtStepStart_, buffersOfRankZero_;
  // What the module's buffers hold now: the step's start, logical rank 0's after its forward
  // (not copied out yet), or anything else.
  enum class Holds { StepStart, RankZero, Other };
  Holds holds_ = Holds::Other;
};

torch::autograd::variable_list GradientReady::operator()(const torch::autograd::variable_list& outputs,
                                                         const torch::autograd::variable_list&) {
  backend_.gradientReady(index_);
  return outputs;
}

}  // namespace

std::unique_ptr<StepBackend> createTrainingBackend(Replica& replica, bool overlap,
                                                   bool backwardThread, int64_t microBatches) {
  return std::make_unique<TrainingBackend>(replica, overlap, backwardThread, microBatches);
}

}  // namespace tl::est
