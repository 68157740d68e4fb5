// Models defined layer by layer, with PyTorch's parameter names so a state dict maps onto the
// PyTorch model of the same architecture.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

namespace tl::models {

struct ModelConfig {
  std::string arch;          // resnet18 | resnet (CIFAR 6n+2, needs depth) | shufflenetv2 | cnn | mlp
  int depth = 0;             // resnet: 20, 32, 44, 56, 110 ...
  int numClasses = 10;
  int inChannels = 3;
  int imageSize = 32;        // height = width of the input
  bool batchNorm = true;     // --no-batchnorm where the architecture allows it
  double dropout = -1;       // < 0: the architecture's default (cnn: 0.25; others: none)
};

// A classifier: forward maps float [B, C, H, W] to logits [B, numClasses].
class Model : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

// Builds a model. Parameters are initialised from libtorch's default generator, so seed it
// (torch::manual_seed) first for a reproducible start. InputError on an unknown arch or a bad
// depth, naming the value and the valid choices.
std::shared_ptr<Model> createModel(const ModelConfig& config);

std::vector<std::string> modelNames();

int64_t countParameters(const torch::nn::Module& module);

// Parameters and buffers in PyTorch's state_dict order: for each module, its own parameters,
// then its own buffers, then its children recursively, names joined with '.'.
std::vector<std::pair<std::string, torch::Tensor>> stateDict(const torch::nn::Module& module);

}  // namespace tl::models
