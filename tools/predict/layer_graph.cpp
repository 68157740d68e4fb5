#include "tools/predict/layer_graph.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <unordered_map>

#include "common/check.h"

namespace tl::predict {
namespace {

using torch::autograd::AccumulateGrad;
using torch::autograd::Node;

bool contains(const std::string& text, std::initializer_list<const char*> needles) {
  for (const char* n : needles)
    if (text.find(n) != std::string::npos) return true;
  return false;
}

// The parameter an edge leads to: an autograd leaf directly, or through a transpose (a linear
// layer multiplies by weight.t()). Undefined when the edge leads to an operation.
at::Tensor parameterBehind(const std::shared_ptr<Node>& fn) {
  if (auto* leaf = dynamic_cast<AccumulateGrad*>(fn.get())) return leaf->variable;
  if (fn->name() == "TBackward0" && fn->next_edges().size() == 1 && fn->next_edges()[0].function) {
    if (auto* leaf = dynamic_cast<AccumulateGrad*>(fn->next_edges()[0].function.get())) return leaf->variable;
  }
  return {};
}

int64_t outputElements(const Node& node) {
  if (node.num_inputs() == 0) return 0;
  // InputMetadata keeps the shape private; a zero tensor of it is its only public face.
  return node.input_metadata(0).zeros_like().numel();
}

}  // namespace

OpKind opKindOfNode(const std::string& autogradName) {
  std::string n = autogradName;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (contains(n, {"conv"})) return OpKind::Conv;
  if (contains(n, {"addmm", "mmbackward", "linear"})) return OpKind::Linear;
  if (contains(n, {"batchnorm", "batch_norm"})) return OpKind::BatchNorm;
  if (contains(n, {"relu", "threshold", "sigmoid", "tanh", "gelu", "silu", "elu"})) return OpKind::Activation;
  if (contains(n, {"addbackward", "subbackward"})) return OpKind::Add;
  if (contains(n, {"pool", "mean"})) return OpKind::Pool;
  if (contains(n, {"view", "reshape", "pad", "slice", "select", "permute", "transpose", "cat", "expand",
                   "squeeze", "clone", "flatten", "tbackward", "chunk", "split"}))
    return OpKind::Reshape;
  if (contains(n, {"dropout", "mul", "div"})) return OpKind::Scale;
  if (contains(n, {"softmax", "nll", "loss"})) return OpKind::Loss;
  return OpKind::Other;
}

const char* opKindName(OpKind kind) {
  static const char* names[kOpKinds] = {"conv", "linear", "batchnorm", "activation", "add",
                                        "pool", "reshape", "scale", "loss", "other"};
  return names[int(kind)];
}

int64_t LayerGraph::totalParameters() const {
  int64_t s = 0;
  for (const auto& n : nodes) s += n.parameters;
  return s;
}
int64_t LayerGraph::totalFlops() const {
  int64_t s = 0;
  for (const auto& n : nodes) s += n.flops;
  return s;
}
int64_t LayerGraph::totalOutputElements() const {
  int64_t s = 0;
  for (const auto& n : nodes) s += n.outputElements;
  return s;
}

LayerGraph layerGraphOf(const at::Tensor& loss) {
  LayerGraph g;
  TL_CHECK(loss.defined() && loss.grad_fn(), "layer graph: the loss has no autograd graph");
  std::unordered_map<const Node*, int> index;
  std::deque<std::shared_ptr<Node>> queue;
  auto visit = [&](const std::shared_ptr<Node>& fn) {
    auto [it, fresh] = index.emplace(fn.get(), int(g.nodes.size()));
    if (fresh) {
      g.nodes.emplace_back();
      queue.push_back(fn);
    }
    return it->second;
  };
  visit(loss.grad_fn());
  while (!queue.empty()) {
    const std::shared_ptr<Node> fn = queue.front();
    queue.pop_front();
    const int self = index.at(fn.get());
    LayerNode node;
    node.kind = opKindOfNode(fn->name());
    node.outputElements = outputElements(*fn);
    int64_t fanIn = 0;  // input elements per output element of the weight (conv, linear)
    for (const auto& edge : fn->next_edges()) {
      if (!edge.function) continue;  // an input that needs no gradient (the images)
      const at::Tensor p = parameterBehind(edge.function);
      if (p.defined()) {
        node.parameters += p.numel();
        if (p.dim() >= 2) fanIn = p.numel() / p.size(0);
        continue;
      }
      g.edges.emplace_back(visit(edge.function), self);
    }
    if (fanIn > 0) node.flops = 2 * node.outputElements * fanIn;
    else if (node.parameters > 0) node.flops = 4 * node.outputElements;  // scale and shift (batch norm)
    else node.flops = node.outputElements;
    g.nodes[size_t(self)] = node;
  }
  std::sort(g.edges.begin(), g.edges.end());
  return g;
}

std::vector<float> nodeFeatures(const LayerNode& node) {
  std::vector<float> f(kNodeFeatures, 0.0f);
  f[size_t(node.kind)] = 1.0f;
  f[kOpKinds] = float(std::log1p(double(node.parameters)));
  f[kOpKinds + 1] = float(std::log1p(double(node.flops)));
  f[kOpKinds + 2] = float(std::log1p(double(node.outputElements)));
  return f;
}

}  // namespace tl::predict
