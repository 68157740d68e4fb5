// Adam and AdamW as PyTorch 1.13 computes them (_single_tensor_adam/_single_tensor_adamw,
// amsgrad off):
//   adam:  g = g + wd * p                  adamw: p *= 1 - lr * wd
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Note where eps goes: added after dividing sqrt(v) by the bias correction, not to sqrt(v).
// The bias corrections are computed in double on the host, as PyTorch does with step.item().
#include <ATen/ATen.h>

#include <cmath>

#include "runtime/optim/optimizers.h"
#include "runtime/optim/slot_optimizer.h"

namespace tl::optim::detail {
namespace {

class Adam : public SlotOptimizer {
 public:
  Adam(const OptimizerOptions& options, bool decoupled, std::vector<at::Tensor> params)
      : SlotOptimizer(decoupled ? "adamw" : "adam", std::move(params), {"exp_avg", "exp_avg_sq"}),
        beta1_(options.beta1),
        beta2_(options.beta2),
        eps_(options.eps),
        weightDecay_(options.weightDecay),
        decoupled_(decoupled) {}

 protected:
  void update(at::Tensor& param, const at::Tensor& grad, ParamState& state, double lr) override {
    at::Tensor& expAvg = state.slots[0];
    at::Tensor& expAvgSq = state.slots[1];
    if (!expAvg.defined()) {
      expAvg = at::zeros_like(param, at::MemoryFormat::Preserve);
      expAvgSq = at::zeros_like(param, at::MemoryFormat::Preserve);
    }
    at::Tensor g = grad;
    if (decoupled_) {
      if (weightDecay_ != 0) param.mul_(1 - lr * weightDecay_);
    } else if (weightDecay_ != 0) {
      g = g.add(param, weightDecay_);
    }
    expAvg.mul_(beta1_).add_(g, 1 - beta1_);
    expAvgSq.mul_(beta2_).addcmul_(g, g, 1 - beta2_);

    const double t = double(state.step);
    const double biasCorrection1 = 1 - std::pow(beta1_, t);
    const double biasCorrection2 = 1 - std::pow(beta2_, t);
    const double stepSize = lr / biasCorrection1;
    const at::Tensor denom = (expAvgSq.sqrt() / std::sqrt(biasCorrection2)).add_(eps_);
    param.addcdiv_(expAvg, denom, -stepSize);
  }

 private:
  double beta1_, beta2_, eps_, weightDecay_;
  bool decoupled_;
};

}  // namespace

std::unique_ptr<Optimizer> createAdam(const OptimizerOptions& options, bool decoupledWeightDecay,
                                      std::vector<at::Tensor> params) {
  return std::make_unique<Adam>(options, decoupledWeightDecay, std::move(params));
}

}  // namespace tl::optim::detail
