// A multi-layer perceptron: flatten, then fc1..fcK with ReLU (and dropout, when asked for)
// after every hidden layer; the last layer maps to the classes. Hidden widths come from
// ModelConfig::hiddenSizes (default 256, 128). Names: fc1, fc2, ... Initialisation: libtorch's
// default Linear init, in layer order.
#include <torch/nn/modules/linear.h>

#include <string>
#include <vector>

#include "runtime/models/architectures.h"

namespace tl::models::detail {
namespace {

const std::vector<int> kDefaultHiddenSizes = {256, 128};

class Mlp : public Model {
 public:
  explicit Mlp(const ModelConfig& config) : dropout_(config.dropout < 0 ? 0.0 : config.dropout) {
    const auto& hidden = config.hiddenSizes.empty() ? kDefaultHiddenSizes : config.hiddenSizes;
    int64_t width = int64_t(config.inChannels) * config.imageSize * config.imageSize;
    for (int next : hidden) {
      layers_.push_back(addLayer(width, next));
      width = next;
    }
    layers_.push_back(addLayer(width, config.numClasses));
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = x.flatten(1);
    for (size_t i = 0; i + 1 < layers_.size(); ++i) {
      x = torch::relu(layers_[i]->forward(x));
      if (dropout_ > 0) x = torch::dropout(x, dropout_, is_training());
    }
    return layers_.back()->forward(x);
  }

 private:
  torch::nn::Linear addLayer(int64_t in, int64_t out) {
    return register_module("fc" + std::to_string(layers_.size() + 1), torch::nn::Linear(in, out));
  }

  double dropout_;
  std::vector<torch::nn::Linear> layers_;
};

}  // namespace

std::shared_ptr<Model> createMlp(const ModelConfig& config) {
  return std::make_shared<Mlp>(config);
}

}  // namespace tl::models::detail
