// Shared scenario of the optimizer tests: one parameter [1, -2, 3], three steps with fixed
// gradients and per-step learning rates (lr * 1, lr * 0.5, lr * 0.25, as a schedule would give).
#pragma once

#include <torch/types.h>
#include <torch/utils.h>

#include <vector>

#include "runtime/optim/optimizer.h"

namespace tl::optim::testing {

inline const std::vector<double> kInitialParam = {1.0, -2.0, 3.0};
inline const std::vector<std::vector<double>> kGrads = {
    {0.1, -0.2, 0.3}, {-0.5, 0.4, 0.05}, {0.2, 0.2, -0.1}};
inline const std::vector<double> kLrScale = {1.0, 0.5, 0.25};

using Trajectory = std::vector<std::vector<double>>;  // the parameter after each step

inline at::Tensor makeTensor(const std::vector<double>& values, at::ScalarType dtype) {
  return torch::tensor(values, torch::kDouble).to(dtype);
}

inline std::vector<double> toVector(const at::Tensor& t) {
  auto d = t.detach().to(torch::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// Runs the scenario through tl's optimizer with parameters of the given dtype.
inline Trajectory runScenario(const OptimizerOptions& options, at::ScalarType dtype) {
  auto param = makeTensor(kInitialParam, dtype).set_requires_grad(true);
  auto optimizer = createOptimizer(options, {param});
  Trajectory out;
  for (size_t k = 0; k < kGrads.size(); ++k) {
    param.mutable_grad() = makeTensor(kGrads[k], dtype);
    optimizer->step(options.lr * kLrScale[k]);
    out.push_back(toVector(param));
  }
  return out;
}

}  // namespace tl::optim::testing
