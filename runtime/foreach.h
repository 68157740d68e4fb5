// Whole lists of tensors in one kernel launch where this libtorch can, one tensor at a time
// where it cannot: the same bits either way (copies and zeros), and on a GPU one launch
// instead of one per parameter or buffer.
#pragma once

#include <ATen/ATen.h>
#include <torch/version.h>

#include <vector>

#include "common/check.h"

namespace tl {

// dst[i] = src[i]; same shapes, dst distinct tensors. _foreach_copy_ arrived after 1.13.
inline void copyEach(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src) {
  TL_CHECK_EQ(dst.size(), src.size(), "copyEach: lists of different lengths");
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  bool sameKind = true;
  for (size_t i = 0; i < dst.size() && sameKind; ++i)
    sameKind = dst[i].device() == src[i].device() && dst[i].scalar_type() == src[i].scalar_type();
  if (sameKind) {
    if (!dst.empty()) at::_foreach_copy_(dst, src);
    return;
  }
#endif
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
}

// Every tensor set to zero.
inline void zeroEach(const std::vector<at::Tensor>& tensors) {
  if (!tensors.empty()) at::_foreach_zero_(tensors);
}

}  // namespace tl
