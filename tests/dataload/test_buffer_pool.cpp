// TensorBufferPool: memory is reused, bounded, and safe to outlive the pool.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <thread>

#include "dataload/buffer_pool.h"

namespace tl::data {
namespace {

TEST(TensorBufferPool, ReusesTheMemoryOfDroppedTensors) {
  TensorBufferPool pool(2);
  at::Tensor a = pool.empty({4, 3, 8, 8}, at::kFloat);
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{4, 3, 8, 8}));
  EXPECT_EQ(a.scalar_type(), at::kFloat);
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data_ptr()) % 64, 0u);
  a.fill_(1.5f);  // the memory is usable
  void* first = a.data_ptr();
  a = at::Tensor();
  EXPECT_EQ(pool.idleBuffers(), 1u);
  at::Tensor b = pool.empty({4, 3, 8, 8}, at::kFloat);
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(pool.idleBuffers(), 0u);
  // Another size gets other memory.
  at::Tensor c = pool.empty({2, 3, 8, 8}, at::kFloat);
  EXPECT_NE(c.data_ptr(), first);
  at::Tensor empty = pool.empty({0, 3, 8, 8}, at::kFloat);
  EXPECT_EQ(empty.numel(), 0);
}

TEST(TensorBufferPool, KeepsAtMostTheIdleLimit) {
  TensorBufferPool pool(2);
  std::vector<at::Tensor> tensors;
  for (int i = 0; i < 5; ++i) tensors.push_back(pool.empty({1000}, at::kLong));
  tensors.clear();
  EXPECT_EQ(pool.idleBuffers(), 2u);
  pool.setMaxIdleBuffers(1);
  EXPECT_EQ(pool.idleBuffers(), 1u);
}

TEST(TensorBufferPool, TensorsOutliveThePoolAndReturnFromOtherThreads) {
  at::Tensor survivor;
  {
    TensorBufferPool pool(4);
    survivor = pool.empty({16}, at::kFloat);
    at::Tensor other = pool.empty({16}, at::kFloat);
    std::thread dropper([t = std::move(other)]() mutable { t = at::Tensor(); });
    dropper.join();
    EXPECT_EQ(pool.idleBuffers(), 1u);
  }
  survivor.fill_(2.0f);  // still valid after the pool is gone
  EXPECT_EQ(survivor.sum().item<float>(), 32.0f);
  survivor = at::Tensor();  // returns to the orphaned state, which then frees everything
}

}  // namespace
}  // namespace tl::data
