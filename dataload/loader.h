// The loader: a resizable pool of worker threads that turns batch requests into tensors.
//
// Threading: next(), setWorkers() and stats() are called from the training thread. Workers
// fill batches in any order; next() hands them out strictly in plan order. A batch's bytes
// depend only on its request (per-sample randomness), never on the pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <ATen/core/Tensor.h>

#include "dataload/sampler.h"
#include "dataload/transforms.h"

namespace tl::data {

struct LoaderOptions {
  int workers = 0;   // 0: load on the calling thread inside next()
  int prefetch = 2;  // batches prepared ahead of the consumer, per worker
};

struct Batch {
  at::Tensor images;  // float32 [B, C, H, W]
  at::Tensor labels;  // int64 [B]
  BatchRequest request;
};

struct LoaderStats {
  int64_t batches = 0;
  int64_t images = 0;
  double waitSeconds = 0;        // time next() spent blocked (the consumer starved)
  double workerBusySeconds = 0;  // summed over workers: time spent producing samples
  int workers = 0;
};

class Loader {
 public:
  // `plan` yields the requests in the order next() returns their batches; nullopt ends the
  // stream. It is called with the loader's lock held, from the training thread or a worker.
  using Plan = std::function<std::optional<BatchRequest>()>;

  Loader(std::shared_ptr<const SamplePipeline> pipeline, Plan plan, const LoaderOptions& options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch in plan order; nullopt when the plan is exhausted.
  std::optional<Batch> next();
  // Resizes the pool while running (0 = synchronous loading). Contents are unaffected.
  void setWorkers(int workers);
  int workers() const;
  LoaderStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tl::data
