// The CIFAR-style ResNets: a 3x3 stride-1 stem without max-pooling (32x32 inputs are too small
// to downsample early), stages of BasicBlocks where every stage after the first halves the
// resolution, global average pooling and one linear layer.
//
//  resnet18: the variant of kuangliu/pytorch-cifar, the one most CIFAR papers and repositories
//            mean by "ResNet-18 on CIFAR": widths 64/128/256/512, blocks [2, 2, 2, 2],
//            projection shortcuts (1x1 conv + BN). 11,173,962 parameters for 10 classes.
//  resnet:   He et al. 2016, section 4.2: depth 6n+2, widths 16/32/64, n blocks per stage,
//            option-A shortcuts (parameter-free, see basic_block.h), so ResNet-20 has
//            269,722 parameters for 10 classes, as in the paper's 0.27M.
//
// Names follow kuangliu (conv1, bn1, layerI.J.{conv1,bn1,conv2,bn2,shortcut.0,shortcut.1},
// linear) for both, so a state dict loads into those PyTorch definitions unchanged. The
// kuangliu forward pools with avg_pool2d(out, 4), which equals the adaptive average pool used
// here for 32x32 inputs; the adaptive pool also serves other input sizes.
//
// Initialisation: libtorch's default module init, the same as PyTorch's (Kaiming-uniform with
// a = sqrt(5) for conv and linear weights, BatchNorm weight 1 and bias 0), drawn from the
// default generator in construction order.
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <string>
#include <vector>

#include "runtime/models/architectures.h"
#include "runtime/models/basic_block.h"
#include "runtime/models/layers.h"

namespace tl::models::detail {
namespace {

struct ResNetLayout {
  std::vector<int64_t> widths;  // channels of each stage; the stem has widths[0]
  std::vector<int64_t> blocksPerStage;
  Shortcut shortcut;
};

class CifarResNet : public Model {
 public:
  CifarResNet(const ModelConfig& config, const ResNetLayout& layout) {
    const bool bias = !config.batchNorm;
    int64_t channels = layout.widths.front();
    conv1_ = register_module(
        "conv1", torch::nn::Conv2d(convOptions(config.inChannels, channels, 3, 1, 1, bias)));
    if (config.batchNorm) bn1_ = register_module("bn1", torch::nn::BatchNorm2d(channels));
    for (size_t stage = 0; stage < layout.widths.size(); ++stage) {
      torch::nn::Sequential layer;
      const int64_t width = layout.widths[stage];
      for (int64_t block = 0; block < layout.blocksPerStage[stage]; ++block) {
        const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
        layer->push_back(BasicBlock(channels, width, stride, layout.shortcut, config.batchNorm));
        channels = width;
      }
      layers_.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
    linear_ = register_module("linear", torch::nn::Linear(channels, config.numClasses));
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(applyNorm(bn1_, conv1_->forward(x)));
    for (auto& layer : layers_) x = layer->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return linear_->forward(x);
  }

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  std::vector<torch::nn::Sequential> layers_;
  torch::nn::Linear linear_{nullptr};
};

}  // namespace

std::shared_ptr<Model> createResNet18(const ModelConfig& config) {
  return std::make_shared<CifarResNet>(
      config, ResNetLayout{{64, 128, 256, 512}, {2, 2, 2, 2}, Shortcut::Projection});
}

std::shared_ptr<Model> createCifarResNet(const ModelConfig& config) {
  const int64_t n = (config.depth - 2) / 6;  // depth validated as 6n+2 by the registry
  return std::make_shared<CifarResNet>(config,
                                       ResNetLayout{{16, 32, 64}, {n, n, n}, Shortcut::ZeroPad});
}

}  // namespace tl::models::detail
