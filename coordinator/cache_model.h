// How a job's throughput depends on its dataset cache budget (--cache-mb), on top of its
// loader-worker model rate(w) = min(C, w / (a*w + b)) (throughput_model.h).
//
// The cache admits samples until the budget is full and never evicts to make room
// (dataload/sample_cache.h), so with budget M a share missShare(M) = max(0, 1 - M / D) of every
// epoch's samples comes from storage, whatever the order (D: the bytes the whole data set would
// take in the cache, kEntryOverhead per sample included). A loader worker reads a missing
// sample itself before decoding it, so each miss adds sampleBytes * storageSecondsPerByte to
// that worker's time per image: going from the miss share the model was fitted at to the one
// of budget M moves b by
//
//   b(M) = b + (missShare(M) - fittedMissShare) * sampleBytes * storageSecondsPerByte
//
// and leaves a (contention) and C (the device) as they are. This is Synergy's optimistic
// shortcut adapted to tl's loader: the worker dimension is measured at one budget, the memory
// dimension is derived from the miss share (known from the budget) and the measured storage
// speed.
//
// Plain values and pure functions: safe from any thread.
#pragma once

#include <cstdint>

#include "coordinator/throughput_model.h"

namespace tl::coordinator {

struct CacheProfile {
  double datasetBytes = 0;           // D: cached bytes + overhead of every sample
  double sampleBytes = 0;            // mean encoded bytes read per missing sample
  double storageSecondsPerByte = 0;  // a worker's read time per byte from storage
  double fittedMissShare = 0;        // the miss share the worker model was fitted at

  bool known() const { return datasetBytes > 0 && sampleBytes > 0; }
  // Share of samples read from storage each epoch with `budgetBytes` of cache.
  double missShare(double budgetBytes) const;
  // The worker model at `budgetBytes` (b moved as above, kept above 1% of what it was).
  ThroughputModel atBudget(const ThroughputModel& fitted, double budgetBytes) const;
  // Predicted images/s with `workers` loader workers and `budgetBytes` of cache.
  double predict(const ThroughputModel& fitted, double workers, double budgetBytes) const;
};

}  // namespace tl::coordinator
