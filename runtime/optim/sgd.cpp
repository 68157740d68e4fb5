// SGD with momentum, dampening, nesterov and L2 weight decay: PyTorch 1.13's
// torch.optim.SGD (_single_tensor_sgd), op for op:
//   d_p = g + wd * p
//   buf = clone(d_p) on the first update, else buf = momentum * buf + (1 - dampening) * d_p
//   d_p = nesterov ? d_p + momentum * buf : buf
//   p -= lr * d_p
// A step updates the parameters a list at a time, as PyTorch 2.x's foreach form
// (_multi_tensor_sgd) does: the same ops per element, so the same bits (on the CPU each list op
// runs the single-tensor op per tensor; on CUDA bench/reference/optimizer_bits.py found
// PyTorch's foreach SGD equal to its single-tensor form at every step), and on a GPU one launch
// per op instead of one per op and parameter.
#include <ATen/ATen.h>

#include <map>
#include <tuple>

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

  // Lists of parameters that share weight decay, device and dtype and already have their
  // momentum buffer; a parameter's first update (its buffer starts as a copy) goes alone.
  void updateAll(const std::vector<size_t>& indices, double lr) override {
    std::map<std::tuple<double, std::string, int>, std::vector<size_t>> lists;
    for (size_t i : indices) {
      ParamState& state = stateAt(i);
      if (momentum_ != 0 && !state.slots[0].defined()) {
        update(paramAt(i), paramAt(i).grad(), state, lr);
        continue;
      }
      const at::Tensor& p = paramAt(i);
      lists[{decayOf(state, weightDecay_), p.device().str(), int(p.scalar_type())}].push_back(i);
    }
    for (const auto& [key, members] : lists) {
      std::vector<at::Tensor> params, grads, buffers;
      for (size_t i : members) {
        params.push_back(paramAt(i));
        grads.push_back(paramAt(i).grad());
        if (momentum_ != 0) buffers.push_back(stateAt(i).slots[0]);
      }
      const double wd = std::get<0>(key);
      std::vector<at::Tensor> dp = wd != 0 ? at::_foreach_add(grads, params, wd) : grads;
      if (momentum_ != 0) {
        at::_foreach_mul_(buffers, momentum_);
        at::_foreach_add_(buffers, dp, 1 - dampening_);
        dp = nesterov_ ? at::_foreach_add(dp, buffers, momentum_) : buffers;
      }
      at::_foreach_add_(params, dp, -lr);
    }
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
