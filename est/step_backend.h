// What a process's device does with the ESTs' micro-batches, chosen once when the executor is
// built: train on them (forward, backward, reduction, optimizer step), or, for
// `--device sim:RATE`, stand in for a device of that speed by waiting batch/RATE seconds and
// training nothing. The step loop calls the same pieces either way.
//
// Threading: every call comes from the training thread; computeEst from an EST's fiber (the
// EST's generators installed), the others from the main fiber between rounds.
#pragma once

#include <memory>

#include <ATen/core/Tensor.h>

#include "est/replica.h"
#include "runtime/train/step.h"

namespace tl::est {

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
  // Adds the time spent computing to `computeSeconds`.
  virtual train::BatchStats computeEst(int logicalRank, const at::Tensor& images, const at::Tensor& labels,
                                       double& computeSeconds) = 0;
  // Main fiber, after a round: combines every member's contributions into the mean gradient
  // over `logicalWorkers`. False: the step must be replayed. Adds its time to `seconds`.
  virtual bool reduce(int logicalWorkers, double& seconds) = 0;
  // Main fiber: DDP's buffer semantics. Only logical rank 0's buffer updates survive the step;
  // its owner (`root` on the device communicator) broadcasts them.
  virtual void applyRankZeroBuffers(bool ownsRankZero, int root) = 0;
  virtual void optimizerStep(double lr) = 0;
};

// Real training on the replica's device.
std::unique_ptr<StepBackend> createTrainingBackend(Replica& replica);
// The stand-in device: each batch takes batch/imagesPerSecond seconds, without using a core.
std::unique_ptr<StepBackend> createSimulatedBackend(double imagesPerSecond);

}  // namespace tl::est
