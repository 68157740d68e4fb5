// Factories of the individual optimizers (internal to runtime/optim). `options` has been
// validated and its eps resolved to the optimizer's default by createOptimizer.
#pragma once

#include <memory>
#include <vector>

#include "runtime/optim/optimizer.h"

namespace tl::optim::detail {

std::unique_ptr<Optimizer> createSgd(const OptimizerOptions& options, bool nesterov,
                                     std::vector<at::Tensor> params);
std::unique_ptr<Optimizer> createAdagrad(const OptimizerOptions& options,
                                         std::vector<at::Tensor> params);
std::unique_ptr<Optimizer> createAdadelta(const OptimizerOptions& options,
                                          std::vector<at::Tensor> params);
// decoupledWeightDecay: AdamW (p *= 1 - lr * wd) instead of Adam's L2 term in the gradient.
std::unique_ptr<Optimizer> createAdam(const OptimizerOptions& options, bool decoupledWeightDecay,
                                      std::vector<at::Tensor> params);

}  // namespace tl::optim::detail
