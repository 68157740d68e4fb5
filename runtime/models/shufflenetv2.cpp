// ShuffleNet V2 1.0x (Ma et al. 2018) with torchvision's module layout and names (conv1,
// stage2..stage4 of InvertedResidual blocks with branch1/branch2 Sequentials, conv5, fc), so a
// state dict maps onto torchvision's definition. Stage widths 116/232/464, repeats 4/8/4,
// conv5 to 1024 channels: 1,263,854 parameters for 10 classes.
//
// Adapted to 32x32 inputs like the CIFAR ResNets: the stem is a 3x3 convolution with stride 1
// instead of stride 2, and the 3x3 max-pool after it is dropped (torchvision would shrink a
// CIFAR image to 8x8 before the first stage). Neither change alters the parameter count.
// BatchNorm is part of every block, so there is no --no-batchnorm variant.
//
// Initialisation: libtorch's default module init (torchvision also keeps PyTorch's defaults).
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/activation.h>

#include <string>
#include <vector>

#include "common/check.h"
#include "runtime/models/architectures.h"
#include "runtime/models/layers.h"

namespace tl::models::detail {
namespace {

constexpr bool kNoBias = false;

// Modules are constructed one statement at a time, in PyTorch's order: each Conv2d draws its
// initial weights from the generator as it is built, and the arguments of a single call (say
// Sequential(conv, bn, conv)) would be built in an order the compiler chooses (right to left
// with GCC), which would give other weights than PyTorch for the same seed.
void addConv(torch::nn::Sequential& seq, int64_t in, int64_t out, int64_t kernel, int64_t stride,
             int64_t padding, int64_t groups = 1) {
  seq->push_back(torch::nn::Conv2d(convOptions(in, out, kernel, stride, padding, kNoBias, groups)));
}
void addBatchNorm(torch::nn::Sequential& seq, int64_t channels) {
  seq->push_back(torch::nn::BatchNorm2d(channels));
}
void addRelu(torch::nn::Sequential& seq) {
  seq->push_back(torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
}

torch::nn::Sequential convBnRelu(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                 int64_t padding) {
  torch::nn::Sequential seq;
  addConv(seq, in, out, kernel, stride, padding);
  addBatchNorm(seq, out);
  addRelu(seq);
  return seq;
}

// Interleaves the channels of the two branches: [B, g*c, H, W] -> view [B, g, c, H, W] ->
// transpose to [B, c, g, H, W] -> flatten back.
torch::Tensor channelShuffle(const torch::Tensor& x, int64_t groups) {
  const auto b = x.size(0), channels = x.size(1), h = x.size(2), w = x.size(3);
  return x.view({b, groups, channels / groups, h, w})
      .transpose(1, 2)
      .contiguous()
      .view({b, channels, h, w});
}

class InvertedResidualImpl : public torch::nn::Module {
 public:
  InvertedResidualImpl(int64_t in, int64_t out, int64_t stride) : stride_(stride) {
    const int64_t branch = out / 2;
    TL_CHECK(stride != 1 || in == 2 * branch, "a stride-1 block keeps its width");
    if (stride > 1) {
      torch::nn::Sequential branch1;
      addConv(branch1, in, in, 3, stride, 1, /*groups=*/in);  // depthwise
      addBatchNorm(branch1, in);
      addConv(branch1, in, branch, 1, 1, 0);
      addBatchNorm(branch1, branch);
      addRelu(branch1);
      branch1_ = register_module("branch1", branch1);
    }
    torch::nn::Sequential branch2;
    addConv(branch2, stride > 1 ? in : branch, branch, 1, 1, 0);
    addBatchNorm(branch2, branch);
    addRelu(branch2);
    addConv(branch2, branch, branch, 3, stride, 1, /*groups=*/branch);  // depthwise
    addBatchNorm(branch2, branch);
    addConv(branch2, branch, branch, 1, 1, 0);
    addBatchNorm(branch2, branch);
    addRelu(branch2);
    branch2_ = register_module("branch2", branch2);
  }

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor out;
    if (stride_ == 1) {
      // Half the channels pass through untouched; the other half go through branch2.
      auto halves = x.chunk(2, 1);
      out = torch::cat({halves[0], branch2_->forward(halves[1])}, 1);
    } else {
      out = torch::cat({branch1_->forward(x), branch2_->forward(x)}, 1);
    }
    return channelShuffle(out, 2);
  }

 private:
  int64_t stride_;
  torch::nn::Sequential branch1_{nullptr};
  torch::nn::Sequential branch2_{nullptr};
};
TORCH_MODULE(InvertedResidual);

class ShuffleNetV2 : public Model {
 public:
  explicit ShuffleNetV2(const ModelConfig& config) {
    const std::vector<int64_t> repeats = {4, 8, 4};
    const std::vector<int64_t> widths = {24, 116, 232, 464, 1024};
    conv1_ = register_module("conv1", convBnRelu(config.inChannels, widths[0], 3, 1, 1));
    int64_t channels = widths[0];
    for (size_t i = 0; i < repeats.size(); ++i) {
      torch::nn::Sequential stage;
      stage->push_back(InvertedResidual(channels, widths[i + 1], 2));
      for (int64_t r = 1; r < repeats[i]; ++r)
        stage->push_back(InvertedResidual(widths[i + 1], widths[i + 1], 1));
      stages_.push_back(register_module("stage" + std::to_string(i + 2), stage));
      channels = widths[i + 1];
    }
    conv5_ = register_module("conv5", convBnRelu(channels, widths.back(), 1, 1, 0));
    fc_ = register_module("fc", torch::nn::Linear(widths.back(), config.numClasses));
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = conv1_->forward(x);
    for (auto& stage : stages_) x = stage->forward(x);
    x = conv5_->forward(x);
    return fc_->forward(x.mean({2, 3}));
  }

 private:
  torch::nn::Sequential conv1_{nullptr};
  std::vector<torch::nn::Sequential> stages_;
  torch::nn::Sequential conv5_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<Model> createShuffleNetV2(const ModelConfig& config) {
  return std::make_shared<ShuffleNetV2>(config);
}

}  // namespace tl::models::detail
