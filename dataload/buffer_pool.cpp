#include "dataload/buffer_pool.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <new>

#include "common/check.h"

namespace tl::data {
namespace {

constexpr size_t kAlignment = 64;  // as c10's CPU allocator, for vectorised kernels

}  // namespace

// Lives as long as the pool or any tensor from it; the last one frees the idle buffers.
struct TensorBufferPool::Shared {
  std::mutex mutex;
  std::multimap<size_t, void*> idle;  // by size in bytes
  size_t maxIdle = 0;

  ~Shared() {
    for (auto& entry : idle) std::free(entry.second);
  }

  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      // The buffer returned last: its memory is the most likely to be in a cache still.
      auto [first, last] = idle.equal_range(bytes);
      if (first != last) {
        auto newest = std::prev(last);
        void* buffer = newest->second;
        idle.erase(newest);
        return buffer;
      }
    }
    void* buffer = nullptr;
    if (posix_memalign(&buffer, kAlignment, bytes) != 0) throw std::bad_alloc();
    return buffer;
  }

  void giveBack(size_t bytes, void* buffer) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (idle.size() < maxIdle) {
        idle.emplace(bytes, buffer);
        return;
      }
    }
    std::free(buffer);
  }

  void trimTo(size_t limit) {
    std::lock_guard<std::mutex> lock(mutex);
    maxIdle = limit;
    while (idle.size() > maxIdle) {
      std::free(idle.begin()->second);
      idle.erase(idle.begin());
    }
  }
};

TensorBufferPool::TensorBufferPool(size_t maxIdleBuffers) : shared_(std::make_shared<Shared>()) {
  shared_->maxIdle = maxIdleBuffers;
}

TensorBufferPool::~TensorBufferPool() = default;

at::Tensor TensorBufferPool::empty(at::IntArrayRef sizes, at::ScalarType type) {
  int64_t numel = 1;
  for (int64_t size : sizes) {
    TL_CHECK_GE(size, 0);
    numel *= size;
  }
  // Whole alignment units, and never 0 bytes (posix_memalign may return null for 0).
  const size_t bytes =
      (size_t(numel) * at::elementSize(type) + kAlignment - 1) / kAlignment * kAlignment +
      kAlignment * (numel == 0);
  void* buffer = shared_->take(bytes);
  std::shared_ptr<Shared> owner = shared_;
  return at::from_blob(
      buffer, sizes, [owner, bytes](void* data) { owner->giveBack(bytes, data); },
      at::TensorOptions().dtype(type).device(at::kCPU));
}

void TensorBufferPool::setMaxIdleBuffers(size_t maxIdleBuffers) { shared_->trimTo(maxIdleBuffers); }

size_t TensorBufferPool::idleBuffers() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->idle.size();
}

}  // namespace tl::data
