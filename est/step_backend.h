// What a process's device does with the ESTs' micro-batches, chosen once when the executor is
// built: train on them (forward, backward, reduction, optimizer step), or, for
// `--device sim:RATE`, stand in for a device of that speed by waiting batch/RATE seconds and
// training nothing. The step loop calls the same pieces either way.
//
// Threading: every call comes from the training thread; computeEst from an EST's fiber (the
// EST's generators installed), the others from the main fiber between rounds.
#pragma once

#include <memory>
#include <optional>

#include <ATen/core/Tensor.h>

#include "est/replica.h"
#include "runtime/train/step.h"

namespace tl::est {

// Of one round with --overlap on: the gradient buckets, how many started their collective before
// the last local EST's backward ended, and how long before that end the first one started.
struct OverlapFigures {
  int buckets = 0;
  int startedDuringBackward = 0;
  double leadSeconds = 0;
};

class StepBackend {
 public:
  virtual ~StepBackend() = default;
  // True for the stand-in device: batches are consumed, the model is not trained.
  virtual bool simulated() const = 0;

  // Main fiber, before a step's first round: the buffers every EST's forward starts from.
  virtual void beginStep() = 0;
  // Main fiber, before every round (the first pass and each replay).
  virtual void beginRound() = 0;
  // EST fiber: one EST's forward and backward on its micro-batch, contributing its gradient.
  // `lastLocal`: the round's last local EST, whose gradient buckets may be reduced while its
  // backward runs (--overlap). Adds the time spent computing to `computeSeconds`.
  virtual train::BatchStats computeEst(int logicalRank, bool lastLocal, const at::Tensor& images,
                                       const at::Tensor& labels, double& computeSeconds) = 0;
  // Main fiber, after a round: combines every member's contributions into the mean gradient
  // over `logicalWorkers`. False: the step must be replayed. Adds its time to `seconds`.
  virtual bool reduce(int logicalWorkers, double& seconds) = 0;
  // Main fiber: DDP's buffer semantics. Only logical rank 0's buffer updates survive the step;
  // its owner (`root` on the device communicator) broadcasts them.
  virtual void applyRankZeroBuffers(bool ownsRankZero, int root) = 0;
  virtual void optimizerStep(double lr) = 0;
  // --clip-grad-norm: clips the reduced gradients (before optimizerStep) and returns their
  // global L2 norm before clipping.
  virtual double clipGradients(double maxNorm) = 0;
  // How the last round's reduction overlapped backward (nullopt: it was not streamed).
  virtual std::optional<OverlapFigures> overlap() const { return std::nullopt; }
};

// Real training on the replica's device. `overlap`: the last local EST streams its gradients
// to the reducer from backward hooks. On a CUDA device, and on the CPU with `backwardThread`
// (for tests: the GPU's thread hand-over, on a machine without one), backward runs on a helper
// thread and the hooks hand the gradients over to the training thread (gradient_handoff.h).
// `microBatches` > 1: each EST's batch in that many pieces (train::forwardBackwardInPieces),
// its gradients reduced after the last piece (no streaming: DDP's no_sync for the others).
std::unique_ptr<StepBackend> createTrainingBackend(Replica& replica, bool overlap,
                                                   bool backwardThread = false, int64_t microBatches = 1);
// The stand-in device: each batch takes batch/imagesPerSecond seconds, without using a core.
std::unique_ptr<StepBackend> createSimulatedBackend(double imagesPerSecond);

}  // namespace tl::est
