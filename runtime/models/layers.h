// Small building blocks shared by the model definitions (internal to runtime/models).
#pragma once

#include <cstdint>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/options/conv.h>

namespace tl::models::detail {

// A Conv2d without bias when a BatchNorm follows it (the norm's shift makes a bias redundant),
// with bias when it does not (the --no-batchnorm variants).
torch::nn::Conv2dOptions convOptions(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                     int64_t padding, bool bias, int64_t groups = 1);

// The --no-batchnorm variants keep the module slot but leave it empty: `bn` is a null holder
// and acts as the identity. PyTorch's equivalent is nn.Identity(), which holds no state, so
// the state dict is the same either way.
torch::Tensor applyNorm(torch::nn::BatchNorm2d& bn, const torch::Tensor& x);

}  // namespace tl::models::detail
