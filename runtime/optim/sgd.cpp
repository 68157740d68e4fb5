// SGD with momentum, dampening, nesterov and L2 weight decay: PyTorch 1.13's
// torch.optim.SGD (_single_tensor_sgd), op for op:
//   d_p = g + wd * p
//   buf = clone(d_p) on the first update, else buf = momentum * buf + (1 - dampening) * d_p
//   d_p = nesterov ? d_p + momentum * buf : buf
//   p -= lr * d_p
#include <ATen/ATen.h>

#include "runtime/optim/optimizers.h"
#include "runtime/optim/slot_optimizer.h"

namespace tl::optim::detail {
namespace {

class Sgd : public SlotOptimizer {
 public:
  Sgd(const OptimizerOptions& options, bool nesterov, std::vector<at::Tensor> params)
      : SlotOptimizer(nesterov ? "nesterov" : "sgd", std::move(params),
                      options.momentum != 0 ? std::vector<std::string>{"momentum_buffer"}
                                            : std::vector<std::string>{}),
        momentum_(options.momentum),
        dampening_(options.dampening),
        weightDecay_(options.weightDecay),
        nesterov_(nesterov) {}

 protected:
  void update(at::Tensor& param, const at::Tensor& grad, ParamState& state, double lr) override {
    const double wd = decayOf(state, weightDecay_);
    at::Tensor dp = grad;
    if (wd != 0) dp = dp.add(param, wd);
    if (momentum_ != 0) {
      at::Tensor& buffer = state.slots[0];
      if (!buffer.defined()) {
        buffer = dp.clone();
      } else {
        buffer.mul_(momentum_).add_(dp, 1 - dampening_);
      }
      dp = nesterov_ ? dp.add(buffer, momentum_) : buffer;
    }
    param.add_(dp, -lr);
  }

 private:
  double momentum_, dampening_, weightDecay_;
  bool nesterov_;
};

}  // namespace

std::unique_ptr<Optimizer> createSgd(const OptimizerOptions& options, bool nesterov,
                                     std::vector<at::Tensor> params) {
  return std::make_unique<Sgd>(options, nesterov, std::move(params));
}

}  // namespace tl::optim::detail
