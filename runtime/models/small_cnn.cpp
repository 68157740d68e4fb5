// A small CNN for MNIST-sized images (1x28x28 Fashion-MNIST; also 3x32x32):
//   conv 3x3 (C->32) - BN - ReLU - maxpool 2
//   conv 3x3 (32->64) - BN - ReLU - maxpool 2
//   dropout - flatten - fc1 (64*(S/4)^2 -> 128) - ReLU - dropout - fc2 (128 -> classes)
// Two conv stages see 5x5 receptive fields at pooled resolution, enough for >88% on
// Fashion-MNIST; BatchNorm lets plain SGD with momentum train it quickly (>80% test accuracy
// after one epoch), and the dropout (default 0.25) exercises per-worker randomness.
//
// Names: conv1, bn1, conv2, bn2, fc1, fc2. --no-batchnorm drops bn1/bn2 and gives the convs a
// bias. Initialisation: libtorch's default module init (same as PyTorch's), in that order.
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "runtime/models/architectures.h"
#include "runtime/models/layers.h"

namespace tl::models::detail {
namespace {

constexpr double kDefaultDropout = 0.25;

class SmallCnn : public Model {
 public:
  explicit SmallCnn(const ModelConfig& config)
      : dropout_(config.dropout < 0 ? kDefaultDropout : config.dropout) {
    const bool bias = !config.batchNorm;
    conv1_ = register_module("conv1",
                             torch::nn::Conv2d(convOptions(config.inChannels, 32, 3, 1, 1, bias)));
    if (config.batchNorm) bn1_ = register_module("bn1", torch::nn::BatchNorm2d(32));
    conv2_ = register_module("conv2", torch::nn::Conv2d(convOptions(32, 64, 3, 1, 1, bias)));
    if (config.batchNorm) bn2_ = register_module("bn2", torch::nn::BatchNorm2d(64));
    const int64_t pooled = config.imageSize / 2 / 2;  // each max-pool floors, as PyTorch's does
    fc1_ = register_module("fc1", torch::nn::Linear(64 * pooled * pooled, 128));
    fc2_ = register_module("fc2", torch::nn::Linear(128, config.numClasses));
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = torch::max_pool2d(torch::relu(applyNorm(bn1_, conv1_->forward(x))), 2);
    x = torch::max_pool2d(torch::relu(applyNorm(bn2_, conv2_->forward(x))), 2);
    x = torch::dropout(x, dropout_, is_training()).flatten(1);
    x = torch::relu(fc1_->forward(x));
    x = torch::dropout(x, dropout_, is_training());
    return fc2_->forward(x);
  }

 private:
  double dropout_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::BatchNorm2d bn2_{nullptr};
  torch::nn::Linear fc1_{nullptr};
  torch::nn::Linear fc2_{nullptr};
};

}  // namespace

std::shared_ptr<Model> createSmallCnn(const ModelConfig& config) {
  return std::make_shared<SmallCnn>(config);
}

}  // namespace tl::models::detail
