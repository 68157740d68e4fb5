// The pieces of one data-parallel training step, shared by every way of running workers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/comm/communicator.h"
#include "runtime/models/model.h"

namespace tl::train {

// Loss and accuracy of one micro-batch.
struct BatchStats {
  double lossSum = 0;   // loss × samples, so batches of different sizes average correctly
  int64_t correct = 0;
  int64_t samples = 0;
  // On a device other than the CPU, forwardBackward leaves the loss (as float64) and the count of
  // correct answers there; resolvePending reads them, every EST's at once, into the fields above
  // (one wait for the device a step instead of two per EST). add() takes resolved stats only.
  at::Tensor pendingLoss, pendingCorrect;
  void add(const BatchStats& o) {
    lossSum += o.lossSum;
    correct += o.correct;
    samples += o.samples;
  }
  double meanLoss() const { return samples ? lossSum / double(samples) : 0.0; }
  double accuracy() const { return samples ? double(correct) / double(samples) : 0.0; }
};

// Clears the gradients, runs forward, mean cross-entropy and backward. The model must be in
// training mode. Leaves the gradients in the parameters' .grad().
BatchStats forwardBackward(models::Model& model, const at::Tensor& images, const at::Tensor& labels);
// The same, with backward run by `backward(loss)` instead of loss.backward() on this thread
// (which it must call, e.g. on another thread, and return once it has returned).
BatchStats forwardBackward(models::Model& model, const at::Tensor& images, const at::Tensor& labels,
                           const std::function<void(const at::Tensor& loss)>& backward);

// --micro-batches K > 1: PyTorch's gradient accumulation. The batch is cut into K pieces along
// its first dimension (at::tensor_split: the first size mod K pieces one row longer; pieces of
// no rows are skipped), and each piece runs forward, its mean loss / K backward, accumulating
// into the gradients cleared once before. Stats sum each piece's loss × rows in piece order;
// the loss is read on the host (resolved) whatever the device.
BatchStats forwardBackwardInPieces(models::Model& model, const at::Tensor& images, const at::Tensor& labels,
                                   int64_t pieces);

// Reads every pending loss and count in `stats` with one copy to the host: the same values as
// reading each on its own (float64 of the loss, times the samples).
void resolvePending(std::vector<BatchStats>& stats);

// The parameters' gradients in parameter order; undefined ones become zeros (a parameter a
// worker did not use still takes part in the reduction, as in DDP).
std::vector<at::Tensor> gradients(models::Model& model);

// DDP's start: every rank takes rank `root`'s parameters and buffers.
void broadcastState(models::Model& model, comm::Communicator& comm, int root = 0);
// DDP's broadcast_buffers: before each forward every rank takes `root`'s buffers.
void broadcastBuffers(models::Model& model, comm::Communicator& comm, int root = 0);

// Sums BatchStats across ranks (one small float64 allreduce).
BatchStats allreduceStats(const BatchStats& local, comm::Communicator& comm);

// SHA-256 of the raw bytes of every parameter and buffer, in state-dict order.
std::string paramsSha256(const models::Model& model);

}  // namespace tl::train
