// Test-set evaluation split across the ranks of a communicator.
#pragma once

#include <memory>

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

}  // namespace tl::train
