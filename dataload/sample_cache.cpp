#include "dataload/sample_cache.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "common/check.h"

namespace tl::data {

SampleCacheStats operator-(const SampleCacheStats& later, const SampleCacheStats& earlier) {
  SampleCacheStats d = later;
  d.hits -= earlier.hits;
  d.misses -= earlier.misses;
  d.bytesFromStorage -= earlier.bytesFromStorage;
  d.bytesFromCache -= earlier.bytesFromCache;
  d.storageSeconds -= earlier.storageSeconds;
  return d;
}

SampleCache::SampleCache(int64_t samples, int64_t budgetBytes) : slots_(size_t(samples)) {
  TL_REQUIRE(budgetBytes >= 0, "a dataset cache budget must be 0 or more bytes, got ",
             budgetBytes);
  budget_ = budgetBytes;
}

SampleCache::~SampleCache() = default;

bool SampleCache::fetch(int64_t index, std::vector<uint8_t>& out) {
  TL_CHECK(index >= 0 && index < samples(), "sample ", index, " outside a cache of ", samples());
  {
    std::shared_lock lock(mutex_);
    const Slot& slot = slots_[size_t(index)];
    if (slot.bytes) {
      out.resize(size_t(slot.size));
      std::memcpy(out.data(), slot.bytes.get(), size_t(slot.size));
      hits_.fetch_add(1, std::memory_order_relaxed);
      bytesFromCache_.fetch_add(slot.size, std::memory_order_relaxed);
      return true;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void SampleCache::offer(int64_t index, const uint8_t* bytes, int64_t size, double readSeconds) {
  TL_CHECK(index >= 0 && index < samples(), "sample ", index, " outside a cache of ", samples());
  bytesFromStorage_.fetch_add(size, std::memory_order_relaxed);
  storageNanos_.fetch_add(int64_t(std::max(0.0, readSeconds) * 1e9), std::memory_order_relaxed);
  const int64_t cost = size + kEntryOverhead;
  {
    // Most misses of a full cache stop here, without the exclusive lock or a copy.
    std::shared_lock lock(mutex_);
    if (used_ + cost > budget_ || slots_[size_t(index)].bytes) return;
  }
  auto copy = std::make_unique<uint8_t[]>(size_t(std::max<int64_t>(size, 1)));
  std::memcpy(copy.get(), bytes, size_t(size));
  std::unique_lock lock(mutex_);
  Slot& slot = slots_[size_t(index)];
  if (used_ + cost > budget_ || slot.bytes) return;  // another thread came first
  slot.bytes = std::move(copy);
  slot.size = size;
  used_ += cost;
  peakUsed_ = std::max(peakUsed_, used_);
  admitted_.push_back(index);
}

void SampleCache::setBudget(int64_t budgetBytes) {
  TL_REQUIRE(budgetBytes >= 0, "a dataset cache budget must be 0 or more bytes, got ",
             budgetBytes);
  std::unique_lock lock(mutex_);
  budget_ = budgetBytes;
  evictToFit();
}

void SampleCache::evictToFit() {
  while (used_ > budget_ && !admitted_.empty()) {
    Slot& slot = slots_[size_t(admitted_.back())];
    used_ -= slot.size + kEntryOverhead;
    slot.bytes.reset();
    slot.size = 0;
    admitted_.pop_back();
  }
  if (admitted_.empty()) admitted_.shrink_to_fit();
}

SampleCacheStats SampleCache::stats() const {
  SampleCacheStats s;
  s.hits = hits_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.bytesFromStorage = bytesFromStorage_.load(std::memory_order_relaxed);
  s.bytesFromCache = bytesFromCache_.load(std::memory_order_relaxed);
  s.storageSeconds = double(storageNanos_.load(std::memory_order_relaxed)) * 1e-9;
  std::shared_lock lock(mutex_);
  s.usedBytes = used_;
  s.budgetBytes = budget_;
  s.cachedSamples = int64_t(admitted_.size());
  s.peakUsedBytes = peakUsed_;
  return s;
}

}  // namespace tl::data
