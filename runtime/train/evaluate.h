// Test-set evaluation split across the ranks of a communicator.
#pragma once

#include <memory>
#include <vector>

#include <c10/core/Device.h>

#include "dataload/sample_source.h"
#include "runtime/comm/communicator.h"
#include "runtime/models/model.h"
#include "runtime/train/step.h"

namespace tl::train {

struct EvalOptions {
  int64_t batch = 256;
  int workers = 0;
  c10::Device device = c10::Device(c10::kCPU);
};

// Rank r scores samples r, r + P, r + 2P, ... (no padding, so every sample counts once) in
// eval mode without gradients; returns the totals summed over all ranks. The model is left in
// training mode.
BatchStats evaluate(models::Model& model, std::shared_ptr<const data::SampleSource> test,
                    comm::Communicator& comm, const EvalOptions& options);

// Periodic validation's fixed batches: batch b (0 <= b < `batches`) is the test split's samples
// [b * batchSize, (b + 1) * batchSize). Rank r of P scores batches r, r + P, ... in eval mode
// without gradients; returns every batch's mean loss (the float the loss gives, as a double),
// in batch order, on every rank. Each batch's loss depends on the batch and the parameters
// only, not on P or on which rank scored it, so the caller's sum in batch order is the same
// double on every placement. The model's training mode and the default CPU generator's state
// are as they were: evaluating changes nothing the training reads.
std::vector<double> evaluateBatchLosses(models::Model& model, std::shared_ptr<const data::SampleSource> test,
                                        comm::Communicator& comm, int64_t batches, int64_t batchSize,
                                        const EvalOptions& options);

// Their mean: the sum in batch order, divided by the count.
double meanInOrder(const std::vector<double>& losses);

}  // namespace tl::train
