// Recycled memory for batch tensors.
//
// A batch tensor is written once by the loader and dropped by the trainer a step later. Fresh
// memory for every batch costs page faults, because malloc hands large blocks back to the
// system and gets them back zeroed: bench_loader with two threads took about 200 faults per
// batch of 128 CIFAR images, none with the pool. The pool hands out tensors whose memory comes
// back to it when the last reference goes, from any thread, even after the pool's owner is
// gone.
#pragma once

#include <cstddef>
#include <memory>

#include <ATen/core/Tensor.h>

namespace tl::data {

class TensorBufferPool {
 public:
  // Keeps at most `maxIdleBuffers` returned buffers for reuse; more are freed.
  explicit TensorBufferPool(size_t maxIdleBuffers);
  ~TensorBufferPool();
  TensorBufferPool(const TensorBufferPool&) = delete;
  TensorBufferPool& operator=(const TensorBufferPool&) = delete;

  // An uninitialised contiguous CPU tensor. Thread-safe.
  at::Tensor empty(at::IntArrayRef sizes, at::ScalarType type);
  void setMaxIdleBuffers(size_t maxIdleBuffers);
  size_t idleBuffers() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace tl::data
