// What a launch checks of a TorchScript model before its first step (and tl-launch --check):
// one trial forward pass of the first training samples, which must give what the job needs.
#pragma once

#include <c10/core/Device.h>

#include "dataload/sample_source.h"
#include "runtime/models/model.h"

namespace tl::train {

// Runs `model` on a batch of the first (up to) two samples of `train`, in eval mode without
// gradients, restoring the default generator's state afterwards (the job's bits do not
// change). InputError naming --model-file when forward does not accept the batch (what the
// module's forward takes, what the data gives, what the module said), returns a non-scalar with
// --model-returns loss, outputs fewer class scores than the dataset has classes, or (token data)
// does not take the largest token id of the data, naming the token file.
// Does nothing for a built-in model.
void checkModelOnData(models::Model& model, const models::ModelConfig& config,
                      const data::SampleSource& train, c10::Device device);

}  // namespace tl::train
