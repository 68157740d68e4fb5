// The context of one EST (logical worker): what makes it behave like its own DDP process.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "dataload/sampler.h"
#include "est/fiber_scheduler.h"

namespace tl::est {

struct EstContext {
  int logicalRank = 0;
  // libtorch's default generator state while this EST runs (dropout and other in-model
  // randomness), and the device generator's when the device is a GPU.
  at::Tensor cpuRngState;
  at::Tensor deviceRngState;
  // How far this EST has read into its shard of the sampler (batches it consumed).
  data::ShardCursor cursor;
};

// The live states of every generator an EST draws from on `device`: the CPU default generator
// and, on a GPU, that device's default generator. A replayed step reinstalls the states its
// first pass started from, so dropout and the like draw the same masks again.
struct GeneratorStates {
  at::Tensor cpu;
  at::Tensor device;  // undefined unless the device is a GPU
  static GeneratorStates capture(c10::Device device);
  void install(c10::Device device) const;
};

// A fresh context: generator states seeded from (seed, logical rank), cursor at the start.
EstContext initialContext(int logicalRank, uint64_t seed, c10::Device device);

// Swaps the default generators' states between EST contexts; plugged into EstFibers.
class GeneratorSwitcher final : public ContextSwitcher {
 public:
  // `contexts` maps logical rank -> context; only local ESTs are switched.
  GeneratorSwitcher(std::vector<EstContext*> contextsByRank, c10::Device device);
  void switchOut(int est) override;
  void switchIn(int est) override;

 private:
  std::vector<EstContext*> contexts_;
  c10::Device device_;
};

// Fixed-size byte records so contexts can be gathered with one allgather.
std::vector<uint8_t> packContext(const EstContext& context);
EstContext unpackContext(const uint8_t* bytes, size_t size);

}  // namespace tl::est
