// The exact reducer's checkpointed state: the per-tensor scales later steps depend on.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace tl::reduce {

struct ExactReducerState {
  std::vector<int> exponents;  // scale 2^e per parameter tensor
  std::vector<double> maxAbs;  // the global max |g| of the last step they were derived from
  bool scalesKnown = false;    // false until the first step has been seen

  // As named CPU tensors: "exponents" int64 [T], "max_abs" float64 [T], "scales_known" int64 [1].
  std::vector<std::pair<std::string, at::Tensor>> toNamedTensors() const;
  // The inverse, for `tensorCount` parameter tensors. InputError naming the entry and what is
  // wrong on a missing, unknown, mis-shaped or out-of-range entry.
  static ExactReducerState fromNamedTensors(
      const std::vector<std::pair<std::string, at::Tensor>>& named, size_t tensorCount);
};

}  // namespace tl::reduce
