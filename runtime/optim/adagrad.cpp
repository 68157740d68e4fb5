// Adagrad as PyTorch 1.13 computes it (_single_tensor_adagrad, dense gradients):
//   g = g + wd * p
//   clr = lr / (1 + (t - 1) * lr_decay)
//   sum += g * g          (sum starts at initial_accumulator_value)
//   p -= clr * g / (sqrt(sum) + eps)
#include <ATen/ATen.h>

#include "runtime/optim/optimizers.h"
#include "runtime/optim/slot_optimizer.h"

namespace tl::optim::detail {
namespace {

class Adagrad : public SlotOptimizer {
 public:
  Adagrad(const OptimizerOptions& options, std::vector<at::Tensor> params)
      : SlotOptimizer("adagrad", std::move(params), {"sum"}),
        eps_(options.eps),
        weightDecay_(options.weightDecay),
        lrDecay_(options.lrDecay),
        initialAccumulator_(options.initialAccumulator) {}

 protected:
  void update(at::Tensor& param, const at::Tensor& grad, ParamState& state, double lr) override {
    const double wd = decayOf(state, weightDecay_);
    at::Tensor& sum = state.slots[0];
    if (!sum.defined()) sum = at::full_like(param, initialAccumulator_, at::MemoryFormat::Preserve);
    at::Tensor g = grad;
    if (wd != 0) g = g.add(param, wd);
    const double clr = lr / (1 + double(state.step - 1) * lrDecay_);
    sum.addcmul_(g, g, 1);
    const at::Tensor std = sum.sqrt().add_(eps_);
    param.addcdiv_(g, std, -clr);
  }

 private:
  double eps_, weightDecay_, lrDecay_, initialAccumulator_;
};

}  // namespace

std::unique_ptr<Optimizer> createAdagrad(const OptimizerOptions& options,
                                         std::vector<at::Tensor> params) {
  return std::make_unique<Adagrad>(options, std::move(params));
}

}  // namespace tl::optim::detail
