#include <torch/types.h>
#include <torch/utils.h>

#include "runtime/models/model.h"

namespace tl::models {
namespace {

// PyTorch's Module.state_dict walks the tree depth-first: a module's own parameters, then its
// own buffers, then each child in registration order. libtorch's named_parameters() instead
// lists all parameters before any buffer, so the order is rebuilt here. Optional tensors that
// a module left undefined (a conv without bias) are not part of the state, as in PyTorch.
void collect(const torch::nn::Module& module, const std::string& prefix,
             std::vector<std::pair<std::string, torch::Tensor>>& out) {
  for (const auto& item : module.named_parameters(/*recurse=*/false))
    if (item.value().defined()) out.emplace_back(prefix + item.key(), item.value());
  for (const auto& item : module.named_buffers(/*recurse=*/false))
    if (item.value().defined()) out.emplace_back(prefix + item.key(), item.value());
  for (const auto& child : module.named_children())
    collect(*child.value(), prefix + child.key() + ".", out);
}

}  // namespace

int64_t countParameters(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters()) count += parameter.numel();
  return count;
}

std::vector<std::pair<std::string, torch::Tensor>> stateDict(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  collect(module, "", out);
  return out;
}

}  // namespace tl::models
