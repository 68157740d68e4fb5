// The exact reducer's buckets (exact_reducer.cpp): how parameters are laid out in int64 sums
// reduced with one collective each, and the batched device path's end of a step, from a
// bucket's sums to the means in the parameters' gradients. Internal to tl_reduce.
#pragma once

#include <ATen/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tl::reduce::exact {

// Integer sums of several parameters back to back, reduced with one collective.
struct Bucket {
  at::Tensor sums;               // int64
  at::Tensor means;              // float32, as long as `sums` (reduce-scatter or batched path)
  std::vector<size_t> members;   // parameter indices
  std::vector<int64_t> offsets;  // element offset of each member in `sums`
  size_t firstMember = 0;        // index of members[0] in the reducer's member order
};

// Where parameter t's sums are: bucket and element offset.
struct Slot {
  size_t bucket = 0;
  int64_t offset = 0;
};

// The buckets of `params`, in reverse parameter order as DDP lays them (the last layers'
// gradients are ready first), each of up to `bucketBytes` of sums (a parameter larger than that
// alone); `withMeans` allocates each bucket's float32 means. `slots` gets one Slot per parameter.
std::vector<Bucket> layBuckets(const std::vector<at::Tensor>& params, int64_t bucketBytes, bool withMeans,
                               std::vector<Slot>& slots);

// The batched path: b.means over elements [begin, end) of the bucket from its sums, in one call
// for every member's piece there; a piece whose sums may exceed 2^53 (only near the range
// limit) is redone by the exact per-tensor path. `exponents[t]`: parameter t's scale.
void meansOfBucket(Bucket& b, int64_t begin, int64_t end, const std::vector<double>& globalMax,
                   const std::vector<int>& exponents, int64_t totalContributions);

// Copies each member's means out of b.means into out[member], in one list operation.
void copyMeansOut(const Bucket& b, std::vector<at::Tensor>& out);

}  // namespace tl::reduce::exact
