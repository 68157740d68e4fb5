// Models defined layer by layer, with PyTorch's parameter names so a state dict maps onto the
// PyTorch model of the same architecture:
//   resnet18      kuangliu/pytorch-cifar ResNet18 (resnet.cpp)
//   resnet        He et al. CIFAR ResNet-(6n+2), option-A shortcuts, same names (resnet.cpp)
//   shufflenetv2  torchvision ShuffleNetV2 1.0x with a CIFAR stem (shufflenetv2.cpp)
//   cnn, mlp      small_cnn.cpp, mlp.cpp
// Files torch.load reads: state_dict_io.h.
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
  std::vector<int> hiddenSizes;  // mlp only: widths of the hidden layers; empty: {256, 128}

  // --- A TorchScript module instead of a built-in architecture (--model-file; arch
  // kTorchScriptArch, model_names.h). torchscript_model.h says how it is loaded.
  std::string file;        // where the module is read from (it may move between resumes)
  std::string fileSha256;  // the module file's SHA-256: what defines the job, not the path
  // How forward's output is scored against the labels: cross-entropy | mse | nll (--loss).
  std::string loss = "cross-entropy";
  bool returnsLoss = false;  // --model-returns loss: forward(inputs, targets) is the loss
};

// The values of ModelConfig::loss.
std::vector<std::string> lossNames();

// A classifier: forward maps float [B, C, H, W] to logits [B, numClasses].
// A model that computes its own loss (returnsLoss) maps (inputs, targets) to a scalar instead.
class Model : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // True for a module whose forward(inputs, targets) returns its mean loss (--model-returns loss).
  virtual bool returnsLoss() const { return false; }
  // That loss; only models that returnsLoss() implement it.
  virtual torch::Tensor forwardLoss(torch::Tensor inputs, torch::Tensor targets);
  // What forward's output is scored with (ModelConfig::loss); createModel sets it.
  const std::string& loss() const { return loss_; }
  void setLoss(std::string loss) { loss_ = std::move(loss); }

 private:
  std::string loss_ = "cross-entropy";
};

// Builds a model. Parameters are initialised from libtorch's default generator, so seed it
// (torch::manual_seed) first for a reproducible start. Every architecture uses PyTorch's
// default module init in PyTorch's construction order, so under the same seed the initial
// parameters equal those of the PyTorch definitions in tests/runtime/models/pytorch_parity.py
// bit for bit (tested). InputError on an unknown arch or a bad
// depth, naming the value and the valid choices.
std::shared_ptr<Model> createModel(const ModelConfig& config);

std::vector<std::string> modelNames();

// InputError when `config` asks for something the architecture cannot do (unknown arch, depth
// not of the form 6n+2, --no-batchnorm or dropout where the model has no such variant, ...).
// createModel calls it; callers may call it earlier to fail before any work.
void validate(const ModelConfig& config);

int64_t countParameters(const torch::nn::Module& module);

// Parameters and buffers in PyTorch's state_dict order: for each module, its own parameters,
// then its own buffers, then its children recursively, names joined with '.'. The tensors are
// the module's own (not copies): writing into them changes the model.
std::vector<std::pair<std::string, torch::Tensor>> stateDict(const torch::nn::Module& module);

}  // namespace tl::models
