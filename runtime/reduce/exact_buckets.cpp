#include "runtime/reduce/exact_buckets.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <utility>

#include "common/check.h"
#include "runtime/foreach.h"
#include "runtime/reduce/fixed_point.h"

namespace tl::reduce::exact {

std::vector<Bucket> layBuckets(const std::vector<at::Tensor>& params, int64_t bucketBytes, bool withMeans,
                               std::vector<Slot>& slots) {
  std::vector<Bucket> buckets;
  slots.assign(params.size(), Slot{});
  const int64_t limit = std::max<int64_t>(1, bucketBytes / int64_t(sizeof(int64_t)));
  Bucket current;
  int64_t currentElems = 0;
  size_t memberCount = 0;
  auto close = [&] {
    if (current.members.empty()) return;
    const at::Tensor& first = params[current.members[0]];
    current.sums = at::zeros({currentElems}, first.options().dtype(at::kLong));
    if (withMeans) current.means = at::zeros({currentElems}, first.options().dtype(at::kFloat));
    memberCount += current.members.size();
    buckets.push_back(std::move(current));
    current = Bucket{};
    current.firstMember = memberCount;
    currentElems = 0;
  };
  for (size_t k = params.size(); k-- > 0;) {
    const int64_t n = params[k].numel();
    if (currentElems > 0 && currentElems + n > limit) close();
    TL_CHECK(current.members.empty() || params[k].device() == params[current.members[0]].device(),
             "parameters on different devices");
    slots[k] = {buckets.size(), currentElems};
    current.members.push_back(k);
    current.offsets.push_back(currentElems);
    currentElems += n;
  }
  close();
  return buckets;
}

void meansOfBucket(Bucket& b, int64_t begin, int64_t end, const std::vector<double>& globalMax,
                   const std::vector<int>& exponents, int64_t totalContributions) {
  std::vector<int64_t> lengths;
  std::vector<int> pieceExponents;
  std::vector<std::pair<int64_t, int64_t>> large;  // (offset, length) of pieces to redo
  int64_t first = -1;
  for (size_t m = 0; m < b.members.size(); ++m) {
    const size_t t = b.members[m];
    const int64_t memberEnd = m + 1 < b.members.size() ? b.offsets[m + 1] : b.sums.numel();
    const int64_t lo = std::max(begin, b.offsets[m]);
    const int64_t to = std::min(end, memberEnd);
    if (lo >= to) continue;
    if (first < 0) first = lo;
    lengths.push_back(to - lo);
    pieceExponents.push_back(exponents[t]);
    if (!fixed::sumsFitDouble(globalMax[t], exponents[t], totalContributions)) large.emplace_back(lo, to - lo);
  }
  if (lengths.empty()) return;
  int64_t total = 0;
  for (int64_t n : lengths) total += n;
  fixed::dequantiseMeanMany(b.sums.narrow(0, first, total), b.means.narrow(0, first, total), lengths,
                            pieceExponents, totalContributions);
  for (const auto& [offset, length] : large) {
    const size_t m = size_t(std::upper_bound(b.offsets.begin(), b.offsets.end(), offset) - b.offsets.begin()) - 1;
    fixed::dequantiseMean(b.sums.narrow(0, offset, length), b.means.narrow(0, offset, length),
                          totalContributions, exponents[b.members[m]]);
  }
}

void copyMeansOut(const Bucket& b, std::vector<at::Tensor>& out) {
  std::vector<at::Tensor> dst, src;
  for (size_t m = 0; m < b.members.size(); ++m) {
    dst.push_back(out[b.members[m]]);
    src.push_back(b.means.narrow(0, b.offsets[m], dst.back().numel()).view(dst.back().sizes()));
  }
  copyEach(dst, src);
}

}  // namespace tl::reduce::exact
