// Scratch space of finished rings, reused by the next ones: a fresh allocation's pages are
// faulted in and zeroed by the kernel on first touch (inside MPI's copy), which on a loaded
// machine cost more than a 1 MiB ring's whole transfer. Keeps at most kSpare spaces, the
// largest: as many as the overlapped buckets of a step have in flight at once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

namespace tl::comm::detail {

class ScratchPool {
 public:
  static constexpr size_t kSpare = 4;

  // The smallest spare space of at least `bytes` (uint8), or a new one.
  at::Tensor take(std::int64_t bytes) {
    auto best = spare_.end();
    for (auto it = spare_.begin(); it != spare_.end(); ++it)
      if (it->numel() >= bytes && (best == spare_.end() || it->numel() < best->numel())) best = it;
    if (best == spare_.end()) return at::empty({bytes}, at::kByte);
    at::Tensor space = std::move(*best);
    spare_.erase(best);
    return space;
  }

  // A space no ring uses any more; kept unless kSpare larger ones are.
  void give(at::Tensor space) {
    if (spare_.size() == kSpare) {
      auto smallest = std::min_element(
          spare_.begin(), spare_.end(),
          [](const at::Tensor& a, const at::Tensor& b) { return a.numel() < b.numel(); });
      if (smallest->numel() >= space.numel()) return;
      spare_.erase(smallest);
    }
    spare_.push_back(std::move(space));
  }

 private:
  std::vector<at::Tensor> spare_;
};

}  // namespace tl::comm::detail
