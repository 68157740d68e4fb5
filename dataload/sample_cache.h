// A dataset cache with a budget: the encoded bytes of samples (a JPEG file's bytes) kept in
// process memory, shared by the loader threads, up to a budget that can change while a job runs.
//
// Admission, not eviction: a sample read from storage is admitted when it fits in what is left
// of the budget, and once admitted it stays (until the budget shrinks below it). Nothing is
// ever evicted to make room for another sample. When the data set is larger than the budget the
// same samples hit every epoch and the others come from storage every epoch, so the hit rate is
// budget / data set size whatever the order. An LRU cache (the kernel's page cache) under a
// shuffled scan of a data set larger than memory evicts much of what the next epoch reads
// first: with a random order each epoch its hit rate is about (budget / size)^2 / 2.
//
// Budget: what is counted is the cached bytes plus kEntryOverhead per cached sample; the
// per-sample index (one slot per sample, allocated at construction) is outside it. Shrinking
// the budget evicts the most recently admitted samples first until the rest fit, then returns.
//
// The cache never changes a sample's bytes: a hit hands out exactly the bytes a storage read
// gave when the sample was admitted.
//
// Threading: every method may be called from any thread. Hits copy under a shared lock, so
// loader threads read concurrently; admissions and budget changes take the lock exclusively.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <vector>

namespace tl::data {

struct SampleCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t bytesFromStorage = 0;  // bytes of the samples that missed (read from storage)
  int64_t bytesFromCache = 0;    // bytes of the samples that hit
  double storageSeconds = 0;     // time the loader threads spent reading the misses, summed
  int64_t usedBytes = 0;         // cached bytes + kEntryOverhead per cached sample
  int64_t budgetBytes = 0;
  int64_t cachedSamples = 0;
  int64_t peakUsedBytes = 0;     // the most usedBytes ever was
};

// The counters of `later` minus those of `earlier` (hits, misses, bytes); the gauges (used,
// budget, samples, peak) are `later`'s. For per-epoch figures.
SampleCacheStats operator-(const SampleCacheStats& later, const SampleCacheStats& earlier);

class SampleCache {
 public:
  // Charged per cached sample on top of its bytes: the heap block header and the index entry.
  static constexpr int64_t kEntryOverhead = 64;

  // A cache for samples 0 .. samples-1 with `budgetBytes` (>= 0). InputError when negative.
  SampleCache(int64_t samples, int64_t budgetBytes);
  ~SampleCache();
  SampleCache(const SampleCache&) = delete;
  SampleCache& operator=(const SampleCache&) = delete;

  // On a hit copies the sample's bytes into `out` (resized) and returns true; counts a hit or
  // a miss. `index` outside the cache's range is an Error.
  bool fetch(int64_t index, std::vector<uint8_t>& out);
  // After a miss: the `size` bytes just read from storage for `index`, which took
  // `readSeconds`. Counts them as read from storage and admits them if they fit in what is
  // left of the budget. (The read time gives the storage speed the memory dimension of
  // tl-profile and the coordinator's cache split rely on: tools/profile, coordinator/cache_model.h.)
  void offer(int64_t index, const uint8_t* bytes, int64_t size, double readSeconds = 0);

  // Changes the budget live. Shrinking evicts the latest admitted samples until the used bytes
  // fit; growing lets later misses be admitted. InputError when negative.
  void setBudget(int64_t budgetBytes);

  int64_t samples() const { return int64_t(slots_.size()); }
  SampleCacheStats stats() const;

 private:
  struct Slot {
    std::unique_ptr<uint8_t[]> bytes;
    int64_t size = 0;
  };
  void evictToFit();  // with mutex_ held exclusively

  mutable std::shared_mutex mutex_;
  std::vector<Slot> slots_;
  std::vector<int64_t> admitted_;  // admission order, for shrinking
  int64_t budget_ = 0;
  int64_t used_ = 0;
  int64_t peakUsed_ = 0;
  std::atomic<int64_t> hits_{0};
  std::atomic<int64_t> misses_{0};
  std::atomic<int64_t> bytesFromStorage_{0};
  std::atomic<int64_t> bytesFromCache_{0};
  std::atomic<int64_t> storageNanos_{0};
};

// MiB as given on the command line (--cache-mb) to bytes.
inline int64_t cacheMiB(double mib) { return int64_t(mib * 1024.0 * 1024.0); }

}  // namespace tl::data
