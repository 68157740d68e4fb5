// The two-convolution residual block of the CIFAR ResNets (He et al. 2016), shared by resnet18
// and the 6n+2 family. They differ only in the shortcut used when the shape changes.
#pragma once

#include <cstdint>

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

namespace tl::models::detail {

enum class Shortcut {
  // 1x1 convolution (+ BatchNorm) to the new shape, as a Sequential named "shortcut" with
  // children "0" (conv) and "1" (bn): the kuangliu ResNet-18 layout.
  Projection,
  // He et al.'s option A: no parameters. Subsample spatially by the stride and zero-pad the
  // new channels, half in front and half behind (as the widely used PyTorch reimplementation,
  // F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, planes // 4, planes // 4)), does).
  ZeroPad,
};

// Parameter names: conv1, bn1, conv2, bn2[, shortcut.0, shortcut.1].
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t inPlanes, int64_t planes, int64_t stride, Shortcut shortcut,
                 bool batchNorm);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::Tensor shortcutPath(const torch::Tensor& x);

  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::BatchNorm2d bn2_{nullptr};
  torch::nn::Sequential projection_{nullptr};  // set for Shortcut::Projection when shape changes
  int64_t stride_;
  int64_t padFront_ = 0, padBack_ = 0;  // Shortcut::ZeroPad: channels added on each side
  bool identity_;                       // same shape in and out: the shortcut is x itself
};
TORCH_MODULE(BasicBlock);

}  // namespace tl::models::detail
