// Counter-based per-sample randomness (Philox-4x32-10).
//
// Augmentation draws come from a generator keyed by (seed, epoch, sample index) alone, so a
// sample's bytes do not depend on which loader thread ran it or how many threads there are.
#pragma once

#include <cstdint>

namespace tl::data {

class SampleRng {
 public:
  SampleRng(uint64_t seed, int64_t epoch, int64_t index);
  // Next 32 random bits.
  uint32_t nextU32();
  // Next 64 random bits: the next two 32-bit draws, the first one high.
  uint64_t nextU64();
  // Uniform in [0, 1).
  double uniform();
  // Uniform integer in [lo, hi] (inclusive).
  int64_t uniformInt(int64_t lo, int64_t hi);
  bool bernoulli(double p) { return uniform() < p; }

  // The bare block function (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
  // exposed so that tests can check it against the published known-answer vectors.
  static void philox4x32x10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

 private:
  void refill();
  uint32_t key_[2];
  uint32_t counter_[4];
  uint32_t out_[4];
  int used_ = 4;
};

}  // namespace tl::data
