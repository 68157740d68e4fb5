// The machinery every tl optimizer shares: per-parameter state created on a parameter's first
// update (as PyTorch does it lazily), a step counter per parameter, and the conversion of that
// state to and from named tensors for checkpoints.
//
// State names: "step" (how many times step() ran), and for every parameter that has been
// updated at least once, "<index>.step" (its own update count; parameters without a gradient
// are skipped and do not count) and "<index>.<slot>" for each slot of the optimizer, using
// PyTorch's state keys ("momentum_buffer", "exp_avg", "exp_avg_sq", "sum", "square_avg",
// "acc_delta"). Counters are int64 scalar tensors; slots have their parameter's shape and dtype.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/optim/optimizer.h"

namespace tl::optim::detail {

class SlotOptimizer : public Optimizer {
 public:
  void step(double lr) final;
  std::vector<std::pair<std::string, at::Tensor>> state() const final;
  void loadState(const std::vector<std::pair<std::string, at::Tensor>>& state) final;
  void setDecay(const std::vector<bool>& decays) final;

 protected:
  struct ParamState {
    int64_t step = 0;               // updates of this parameter so far, this one included
    std::vector<at::Tensor> slots;  // in slotNames order; undefined before the first update
    bool decays = true;             // weight decay applies (setDecay); a setting, not state
  };

  // The weight decay of a parameter: `weightDecay`, or 0 outside the decayed group.
  static double decayOf(const ParamState& state, double weightDecay) { return state.decays ? weightDecay : 0.0; }

  SlotOptimizer(std::string name, std::vector<at::Tensor> params,
                std::vector<std::string> slotNames);

  // Updates `param` in place from `grad` with learning rate `lr`, under a NoGradGuard.
  // `state.step` already counts this update. Undefined slots (first update) are created here,
  // because their first value depends on the rule (SGD's buffer starts as a copy of d_p).
  virtual void update(at::Tensor& param, const at::Tensor& grad, ParamState& state, double lr) = 0;

  // One step's updates: parameters `indices` (those with a gradient, in order), their counters
  // already advanced, under a NoGradGuard. By default update() for each; an optimizer may update
  // a list of parameters at a time instead, with the same ops and so the same bits (on a GPU one
  // launch per op and list, not per op and parameter).
  virtual void updateAll(const std::vector<size_t>& indices, double lr);
  at::Tensor& paramAt(size_t i) { return params_[i]; }
  ParamState& stateAt(size_t i) { return states_[i]; }

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::vector<std::string> slotNames_;
  std::vector<ParamState> states_;
  int64_t steps_ = 0;
};

}  // namespace tl::optim::detail
