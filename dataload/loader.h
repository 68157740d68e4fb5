// The loader: a resizable pool of worker threads that turns batch requests into tensors.
//
// Threading: next(), setWorkers() and stats() are called from the training thread. Workers
// fill batches in any order; next() hands them out strictly in plan order. A batch's bytes
// depend only on its request (per-sample randomness), never on the pool.
//
// Work is split into tasks of a few samples of one batch, so several workers share a batch
// and a small prefetch still keeps every worker busy. Up to workers * prefetch batches are in
// flight; with no workers next() loads the next batch itself.
//
// Errors are sticky: when a sample fails (a decode error, a bad index) or the plan throws, the
// batches before it are still returned, then next() rethrows that same exception object, and
// does so on every later call. The destructor stops the workers after their current task and
// joins them, wherever the consumer or the plan stopped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <ATen/core/Tensor.h>

#include "dataload/sample_source.h"
#include "dataload/sampler.h"

namespace tl::data {

struct LoaderOptions {
  int workers = 0;   // 0: load on the calling thread inside next()
  int prefetch = 2;  // batches prepared ahead of the consumer, per worker
  // How many samples of a batch one worker takes at a time: small enough that several workers
  // share a batch, large enough that the lock is rarely contended (measured in bench_loader).
  int samplesPerTask = 32;
};

// A batch of B samples. Image datasets: float32 [B, C, H, W] images and int64 [B] labels. Array
// datasets: their inputs and targets, [B, ...] in the sample's dtype (SampleSource specs).
struct Batch {
  at::Tensor images;  // the inputs
  at::Tensor labels;  // the targets
  BatchRequest request;
};

struct LoaderStats {
  int64_t batches = 0;
  int64_t images = 0;
  // Time next() spent before its batch was ready (the consumer starved). With no workers that
  // includes loading the batch on the calling thread.
  double waitSeconds = 0;
  // Summed over workers (and the calling thread when it loads): time spent producing samples.
  double workerBusySeconds = 0;
  int workers = 0;
};

class Loader {
 public:
  // `plan` yields the requests in the order next() returns their batches; nullopt ends the
  // stream. It is called with the loader's lock held, from the training thread or a worker.
  using Plan = std::function<std::optional<BatchRequest>()>;

  // InputError for negative workers, prefetch < 1 or samplesPerTask < 1.
  Loader(std::shared_ptr<const SampleSource> source, Plan plan, const LoaderOptions& options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch in plan order; nullopt when the plan is exhausted.
  std::optional<Batch> next();
  // Resizes the pool while running (0 = synchronous loading). Contents are unaffected. Returns
  // once retired workers have finished their current task and exited. InputError if negative.
  void setWorkers(int workers);
  int workers() const;
  LoaderStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tl::data
