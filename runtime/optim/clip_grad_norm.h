// --clip-grad-norm: PyTorch's torch.nn.utils.clip_grad_norm_ (L2), op for op, on the gradients
// every process holds after the reduction, so every placement sees the same norm and bits.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace tl::optim {

// Scales `grads` in place by min(1, maxNorm / (norm + 1e-6)), where norm is the L2 norm of the
// per-tensor L2 norms, and returns that norm (0-dim, before clipping, on the grads' device).
// Follows the clip_grad_norm_ of the libtorch tl is built against: 1.13 takes torch.norm,
// 2.1 and later _foreach_norm and linalg.vector_norm. `grads` must not be empty.
at::Tensor clipGradNorm(const std::vector<at::Tensor>& grads, double maxNorm);

}  // namespace tl::optim
