#include "runtime/models/layers.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace tl::models::detail {

torch::nn::Conv2dOptions convOptions(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                     int64_t padding, bool bias, int64_t groups) {
  return torch::nn::Conv2dOptions(in, out, kernel)
      .stride(stride)
      .padding(padding)
      .bias(bias)
      .groups(groups);
}

torch::Tensor applyNorm(torch::nn::BatchNorm2d& bn, const torch::Tensor& x) {
  return bn ? bn->forward(x) : x;
}

}  // namespace tl::models::detail
