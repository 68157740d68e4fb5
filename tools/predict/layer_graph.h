// The layer graph tl-predict's graph network reads: the operations of one training step's
// forward pass as autograd recorded them (convolution, matrix product, batch norm, activation,
// residual add, pooling, ...), each with its parameters, forward FLOPs and output size, and an
// edge from each operation to the ones consuming its output. Taken from the autograd graph of
// the loss rather than from the module tree, so residual connections and the functional parts
// of a model (pooling, flatten, the loss) are in it as the step runs them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace at {
class Tensor;
}

namespace tl::predict {

enum class OpKind : int {
  Conv, Linear, BatchNorm, Activation, Add, Pool, Reshape, Scale, Loss, Other,
};
constexpr int kOpKinds = 10;

// The kind of an autograd node from its name ("ConvolutionBackward0" -> Conv, ...).
OpKind opKindOfNode(const std::string& autogradName);
const char* opKindName(OpKind kind);

struct LayerNode {
  OpKind kind = OpKind::Other;
  int64_t parameters = 0;      // elements of the parameters this operation reads
  int64_t flops = 0;           // forward floating-point operations (multiply-add = 2)
  int64_t outputElements = 0;  // elements of its forward output
};

struct LayerGraph {
  std::vector<LayerNode> nodes;
  std::vector<std::pair<int, int>> edges;  // producer -> consumer (forward direction)

  int64_t totalParameters() const;
  int64_t totalFlops() const;
  int64_t totalOutputElements() const;
};

// Walks the autograd graph behind `loss` (before backward frees it). Parameters (autograd
// leaves) become node attributes, not nodes.
LayerGraph layerGraphOf(const at::Tensor& loss);

// Per-node input of the graph network: one-hot kind, log1p(parameters), log1p(flops),
// log1p(output elements).
constexpr int kNodeFeatures = kOpKinds + 3;
std::vector<float> nodeFeatures(const LayerNode& node);

}  // namespace tl::predict
