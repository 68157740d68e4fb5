// Optimizers with PyTorch 1.13's update rules, written here so their state is plain named
// tensors (checkpointed bit for bit) and every update is a fixed sequence of tensor ops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace tl::optim {

struct OptimizerOptions {
  std::string name = "sgd";  // sgd | nesterov | adagrad | adadelta | adam | adamw
  double lr = 0.1;           // base lr; step(lr) receives the scheduled value
  double momentum = 0.0;     // sgd, nesterov (nesterov needs momentum > 0); others ignore it
  double dampening = 0.0;    // sgd
  double weightDecay = 0.0;  // L2 for all but adamw, where it is decoupled
  double beta1 = 0.9, beta2 = 0.999;  // adam, adamw
  double eps = -1;           // < 0: the optimizer's PyTorch default (adam 1e-8, adagrad 1e-10, adadelta 1e-6)
  double rho = 0.9;          // adadelta
  double lrDecay = 0.0;      // adagrad
  double initialAccumulator = 0.0;  // adagrad
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter from its .grad(), with learning rate `lr`.
  // Parameters whose grad is undefined are skipped, as in PyTorch.
  virtual void step(double lr) = 0;
  void zeroGrad();
  const std::vector<at::Tensor>& params() const { return params_; }
  // Weight decay for parameter i only where decays[i] (one entry per parameter; by default all
  // decay): PyTorch's two parameter groups, one with weight_decay 0 (decay_groups.h).
  virtual void setDecay(const std::vector<bool>& decays) = 0;

  // The state as named tensors ("3.momentum_buffer", "step"...), for checkpoints.
  virtual std::vector<std::pair<std::string, at::Tensor>> state() const = 0;
  // Restores state() output. InputError if names or shapes do not match this optimizer.
  virtual void loadState(const std::vector<std::pair<std::string, at::Tensor>>& state) = 0;

 protected:
  explicit Optimizer(std::vector<at::Tensor> params) : params_(std::move(params)) {}
  std::vector<at::Tensor> params_;
};

// InputError on an unknown name or invalid hyper-parameters, naming them.
std::unique_ptr<Optimizer> createOptimizer(const OptimizerOptions& options,
                                           std::vector<at::Tensor> params);

std::vector<std::string> optimizerNames();

}  // namespace tl::optim
