#include "runtime/optim/slot_optimizer.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/check.h"

namespace tl::optim::detail {

SlotOptimizer::SlotOptimizer(std::string name, std::vector<at::Tensor> params,
                             std::vector<std::string> slotNames)
    : Optimizer(std::move(params)),
      name_(std::move(name)),
      slotNames_(std::move(slotNames)),
      states_(params_.size()) {
  for (auto& state : states_) state.slots.resize(slotNames_.size());
}

void SlotOptimizer::setDecay(const std::vector<bool>& decays) {
  TL_CHECK_EQ(decays.size(), states_.size(), "optimizer ", name_, ": one decay setting per parameter");
  for (size_t i = 0; i < decays.size(); ++i) states_[i].decays = decays[i];
}

void SlotOptimizer::step(double lr) {
  TL_REQUIRE(std::isfinite(lr) && lr >= 0, "optimizer ", name_,
             ": learning rate must be finite and >= 0 (got ", lr, ")");
  torch::NoGradGuard noGrad;
  std::vector<size_t> indices;
  indices.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& grad = params_[i].grad();
    if (!grad.defined()) continue;
    TL_CHECK(!grad.is_sparse(), "optimizer ", name_, ": sparse gradients are not supported");
    indices.push_back(i);
  }
  for (size_t i : indices) ++states_[i].step;
  updateAll(indices, lr);
  for (size_t i : indices) {
    for (const auto& slot : states_[i].slots) TL_CHECK(slot.defined(), name_, " left a slot unset");
  }
  ++steps_;
}

void SlotOptimizer::updateAll(const std::vector<size_t>& indices, double lr) {
  for (size_t i : indices) update(params_[i], params_[i].grad(), states_[i], lr);
}

std::vector<std::pair<std::string, at::Tensor>> SlotOptimizer::state() const {
  auto counter = [](int64_t value) { return torch::tensor(value, torch::kInt64); };
  std::vector<std::pair<std::string, at::Tensor>> out;
  out.emplace_back("step", counter(steps_));
  for (size_t i = 0; i < states_.size(); ++i) {
    if (states_[i].step == 0) continue;
    const std::string prefix = std::to_string(i) + ".";
    out.emplace_back(prefix + "step", counter(states_[i].step));
    for (size_t s = 0; s < slotNames_.size(); ++s)
      out.emplace_back(prefix + slotNames_[s], states_[i].slots[s].detach().clone());
  }
  return out;
}

namespace {

int64_t readCounter(const std::string& optimizer, const std::string& name, const at::Tensor& t) {
  TL_REQUIRE(t.numel() == 1 && at::isIntegralType(t.scalar_type(), /*includeBool=*/false),
             "optimizer ", optimizer, " state: '", name,
             "' must be a single integer counter (got shape ", t.sizes(), ", dtype ",
             t.scalar_type(), ")");
  const int64_t value = t.item<int64_t>();
  TL_REQUIRE(value >= 0, "optimizer ", optimizer, " state: '", name, "' is negative (", value, ")");
  return value;
}

// "12.exp_avg" -> (12, "exp_avg"); index -1 when the name has no "<digits>." prefix.
std::pair<int64_t, std::string> splitName(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos || dot == 0) return {-1, name};
  int64_t index = -1;
  auto [end, error] = std::from_chars(name.data(), name.data() + dot, index);
  if (error != std::errc() || end != name.data() + dot) return {-1, name};
  return {index, name.substr(dot + 1)};
}

}  // namespace

void SlotOptimizer::loadState(const std::vector<std::pair<std::string, at::Tensor>>& state) {
  // Build the new state completely before replacing the current one, so that a bad
  // checkpoint leaves the optimizer as it was.
  std::vector<ParamState> loaded(params_.size());
  for (auto& param : loaded) param.slots.resize(slotNames_.size());
  std::vector<bool> hasCounter(params_.size(), false);
  int64_t steps = -1;
  for (const auto& [name, tensor] : state) {
    TL_REQUIRE(tensor.defined(), "optimizer ", name_, " state: '", name,
               "' is an undefined tensor");
    if (name == "step") {
      TL_REQUIRE(steps < 0, "optimizer ", name_, " state: 'step' appears twice");
      steps = readCounter(name_, name, tensor);
      continue;
    }
    const auto [index, slot] = splitName(name);
    TL_REQUIRE(index >= 0 && index < int64_t(params_.size()), "optimizer ", name_, " state: '",
               name, "' does not name one of the ", params_.size(), " parameters");
    ParamState& param = loaded[index];
    if (slot == "step") {
      TL_REQUIRE(!hasCounter[index], "optimizer ", name_, " state: '", name, "' appears twice");
      hasCounter[index] = true;
      param.step = readCounter(name_, name, tensor);
      continue;
    }
    const auto it = std::find(slotNames_.begin(), slotNames_.end(), slot);
    TL_REQUIRE(it != slotNames_.end(), "optimizer ", name_, " state: '", name,
               "' is not state of this optimizer (a checkpoint of another optimizer or setting?)");
    at::Tensor& target = param.slots[it - slotNames_.begin()];
    TL_REQUIRE(!target.defined(), "optimizer ", name_, " state: '", name, "' appears twice");
    const at::Tensor& p = params_[index];
    TL_REQUIRE(tensor.sizes() == p.sizes(), "optimizer ", name_, " state: '", name, "' has shape ",
               tensor.sizes(), " but parameter ", index, " has shape ", p.sizes());
    TL_REQUIRE(tensor.scalar_type() == p.scalar_type(), "optimizer ", name_, " state: '", name,
               "' has dtype ", tensor.scalar_type(), " but parameter ", index, " has ",
               p.scalar_type());
    // A copy on the parameter's device: checkpoints may move between CPU and GPU.
    target = tensor.detach().to(p.device(), p.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
  }
  TL_REQUIRE(steps >= 0, "optimizer ", name_, " state lacks 'step'");
  for (size_t i = 0; i < loaded.size(); ++i) {
    const bool updated = loaded[i].step > 0;
    for (size_t s = 0; s < slotNames_.size(); ++s) {
      const std::string name = std::to_string(i) + "." + slotNames_[s];
      TL_REQUIRE(!updated || loaded[i].slots[s].defined(), "optimizer ", name_, " state lacks '",
                 name, "' (parameter ", i, " has been updated ", loaded[i].step, " times)");
      TL_REQUIRE(updated || !loaded[i].slots[s].defined(), "optimizer ", name_, " state has '",
                 name, "' but no positive '", i, ".step'");
    }
  }
  // Which group a parameter is in is the optimizer's setting, not its checkpointed state.
  for (size_t i = 0; i < loaded.size(); ++i) loaded[i].decays = states_[i].decays;
  states_ = std::move(loaded);
  steps_ = steps;
}

}  // namespace tl::optim::detail
