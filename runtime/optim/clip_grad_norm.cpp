#include "runtime/optim/clip_grad_norm.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include "common/check.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define TL_CLIP_LIKE_2_1 1
#else
#define TL_CLIP_LIKE_2_1 0
#endif

namespace tl::optim {

at::Tensor clipGradNorm(const std::vector<at::Tensor>& grads, double maxNorm) {
  TL_CHECK(!grads.empty(), "clipGradNorm: no gradients");
  TL_CHECK(maxNorm > 0, "clipGradNorm: max norm ", maxNorm);
  at::NoGradGuard noGrad;
  std::vector<at::Tensor> norms;
  norms.reserve(grads.size());
#if TL_CLIP_LIKE_2_1
  // clip_grad_norm_ of 2.1+: torch._foreach_norm(grads, 2), then linalg.vector_norm of their stack.
  norms = at::_foreach_norm(grads, 2);
  const at::Tensor total = at::linalg_vector_norm(at::stack(norms), 2);
#else
  // 1.13: torch.norm(g, 2.0) of each (at::norm over every dimension), then of their stack.
  for (const at::Tensor& g : grads) {
    std::vector<int64_t> dims(size_t(g.dim()));
    for (int64_t d = 0; d < g.dim(); ++d) dims[size_t(d)] = d;
    norms.push_back(at::norm(g, 2.0, dims, /*keepdim=*/false));
  }
  const at::Tensor total = at::norm(at::stack(norms), 2.0, {0}, /*keepdim=*/false);
#endif
  // max_norm / (total_norm + 1e-6) is Tensor.__rtruediv__: reciprocal() * max_norm.
  const at::Tensor coefficient = at::clamp((total + 1e-6).reciprocal() * maxNorm, c10::nullopt, 1.0);
  for (const at::Tensor& g : grads) g.mul_(coefficient);
  return total;
}

}  // namespace tl::optim
