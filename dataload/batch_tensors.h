// A batch of a SampleSource as tensors: the tensor type of each array dtype and the shape of a
// batch of samples. The loader's batches and a model's trial batch (runtime/train/model_check.h)
// are both made this way.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

#include "common/check.h"
#include "dataload/sample_source.h"

namespace tl::data {

inline at::ScalarType scalarType(ArrayDtype dtype) {
  switch (dtype) {
    case ArrayDtype::UInt8: return at::kByte;
    case ArrayDtype::Int32: return at::kInt;
    case ArrayDtype::Int64: return at::kLong;
    case ArrayDtype::Float32: return at::kFloat;
    default: break;
  }
  throw Error(str("a sample source gave ", dtypeName(dtype), ", which has no tensor type here"));
}

// [batch, spec.shape...]
inline std::vector<int64_t> batchShape(int64_t batch, const SampleSpec& spec) {
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
  return shape;
}

}  // namespace tl::data
