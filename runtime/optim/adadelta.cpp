// Adadelta (Zeiler 2012) as PyTorch 1.13's torch.optim.Adadelta computes it
// (_single_tensor_adadelta); libtorch 1.13 has no Adadelta of its own:
//   g = g + wd * p
//   square_avg = rho * square_avg + (1 - rho) * g * g
//   delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
//   acc_delta = rho * acc_delta + (1 - rho) * delta * delta
//   p -= lr * delta
#include <ATen/ATen.h>

#include "runtime/optim/optimizers.h"
#include "runtime/optim/slot_optimizer.h"

namespace tl::optim::detail {
namespace {

class Adadelta : public SlotOptimizer {
 public:
  Adadelta(const OptimizerOptions& options, std::vector<at::Tensor> params)
      : SlotOptimizer("adadelta", std::move(params), {"square_avg", "acc_delta"}),
        rho_(options.rho),
        eps_(options.eps),
        weightDecay_(options.weightDecay) {}

 protected:
  void update(at::Tensor& param, const at::Tensor& grad, ParamState& state, double lr) override {
    const double wd = decayOf(state, weightDecay_);
    at::Tensor& squareAvg = state.slots[0];
    at::Tensor& accDelta = state.slots[1];
    if (!squareAvg.defined()) {
      squareAvg = at::zeros_like(param, at::MemoryFormat::Preserve);
      accDelta = at::zeros_like(param, at::MemoryFormat::Preserve);
    }
    at::Tensor g = grad;
    if (wd != 0) g = g.add(param, wd);
    squareAvg.mul_(rho_).addcmul_(g, g, 1 - rho_);
    const at::Tensor std = squareAvg.add(eps_).sqrt_();
    const at::Tensor delta = accDelta.add(eps_).sqrt_().div_(std).mul_(g);
    accDelta.mul_(rho_).addcmul_(delta, delta, 1 - rho_);
    param.add_(delta, -lr);
  }

 private:
  double rho_, eps_, weightDecay_;
};

}  // namespace

std::unique_ptr<Optimizer> createAdadelta(const OptimizerOptions& options,
                                          std::vector<at::Tensor> params) {
  return std::make_unique<Adadelta>(options, std::move(params));
}

}  // namespace tl::optim::detail
