#include "runtime/models/basic_block.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "common/check.h"
#include "runtime/models/layers.h"

namespace tl::models::detail {

BasicBlockImpl::BasicBlockImpl(int64_t inPlanes, int64_t planes, int64_t stride, Shortcut shortcut,
                               bool batchNorm)
    : stride_(stride), identity_(stride == 1 && inPlanes == planes) {
  const bool bias = !batchNorm;
  conv1_ = register_module("conv1",
                           torch::nn::Conv2d(convOptions(inPlanes, planes, 3, stride, 1, bias)));
  if (batchNorm) bn1_ = register_module("bn1", torch::nn::BatchNorm2d(planes));
  conv2_ = register_module("conv2", torch::nn::Conv2d(convOptions(planes, planes, 3, 1, 1, bias)));
  if (batchNorm) bn2_ = register_module("bn2", torch::nn::BatchNorm2d(planes));
  if (identity_) return;
  if (shortcut == Shortcut::Projection) {
    projection_ = torch::nn::Sequential();
    projection_->push_back(torch::nn::Conv2d(convOptions(inPlanes, planes, 1, stride, 0, bias)));
    if (batchNorm) projection_->push_back(torch::nn::BatchNorm2d(planes));
    register_module("shortcut", projection_);
  } else {
    // Option A only ever widens: a narrowing block would have to drop channels.
    TL_CHECK_GE(planes, inPlanes, "zero-pad shortcut cannot reduce channels");
    padFront_ = (planes - inPlanes) / 2;
    padBack_ = planes - inPlanes - padFront_;
  }
}

torch::Tensor BasicBlockImpl::shortcutPath(const torch::Tensor& x) {
  if (identity_) return x;
  if (projection_) return projection_->forward(x);
  using torch::indexing::Slice;
  auto subsampled = x.index({Slice(), Slice(), Slice(0, torch::indexing::None, stride_),
                             Slice(0, torch::indexing::None, stride_)});
  return torch::constant_pad_nd(subsampled, {0, 0, 0, 0, padFront_, padBack_}, 0);
}

torch::Tensor BasicBlockImpl::forward(torch::Tensor x) {
  auto out = torch::relu(applyNorm(bn1_, conv1_->forward(x)));
  out = applyNorm(bn2_, conv2_->forward(out));
  out = out + shortcutPath(x);
  return torch::relu(out);
}

}  // namespace tl::models::detail
