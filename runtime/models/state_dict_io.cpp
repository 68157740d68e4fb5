#include "runtime/models/state_dict_io.h"

#include <torch/serialize.h>

#include <map>
#include <set>

#include "common/check.h"
#include "common/files.h"
#include "runtime/models/model.h"

namespace tl::models {

void saveStateDict(const torch::nn::Module& module, const std::string& path) {
  // torch::pickle_save of a Dict<string, Tensor> writes what torch.save(dict) writes; a
  // c10::Dict keeps insertion order, so the file lists the state in PyTorch's order.
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : stateDict(module))
    dict.insert(name, tensor.detach().to(torch::kCPU).contiguous());
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  writeFileAtomic(path, std::string_view(bytes.data(), bytes.size()));
}

namespace {

std::map<std::string, at::Tensor> readTensorDict(const std::string& path) {
  const std::string bytes = readFile(path);
  c10::IValue value;
  try {
    value = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const c10::Error& e) {
    inputError("state dict '", path,
               "' is not a readable torch.save file: ", e.what_without_backtrace());
  }
  TL_REQUIRE(value.isGenericDict(), "state dict '", path, "' holds a ", value.tagKind(),
             ", not a dict of tensors");
  std::map<std::string, at::Tensor> tensors;
  for (const auto& entry : value.toGenericDict()) {
    TL_REQUIRE(entry.key().isString() && entry.value().isTensor(), "state dict '", path,
               "' holds a non-string key or a non-tensor value");
    tensors.emplace(entry.key().toStringRef(), entry.value().toTensor());
  }
  return tensors;
}

}  // namespace

void loadStateDict(torch::nn::Module& module, const std::string& path) {
  auto loaded = readTensorDict(path);
  const auto targets = stateDict(module);
  // Check everything before touching the module, so a bad file leaves it as it was.
  // Names first: a file of another architecture is reported as such, not as a shape mismatch.
  for (const auto& target : targets)
    TL_REQUIRE(loaded.count(target.first), "state dict '", path, "' lacks '", target.first, "'");
  std::set<std::string> expected;
  for (const auto& target : targets) expected.insert(target.first);
  for (const auto& entry : loaded)
    TL_REQUIRE(expected.count(entry.first), "state dict '", path, "' has '", entry.first,
               "', which the model lacks");
  for (const auto& [name, target] : targets) {
    auto it = loaded.find(name);
    TL_REQUIRE(it->second.sizes() == target.sizes(), "state dict '", path, "': '", name,
               "' has shape ", it->second.sizes(), ", the model expects ", target.sizes());
    TL_REQUIRE(it->second.scalar_type() == target.scalar_type(), "state dict '", path, "': '", name,
               "' has dtype ", it->second.scalar_type(), ", the model expects ",
               target.scalar_type());
  }
  torch::NoGradGuard noGrad;
  for (const auto& [name, target] : targets) {
    auto tensor = target;  // shares storage with the module's tensor
    tensor.copy_(loaded.at(name));
  }
}

}  // namespace tl::models
