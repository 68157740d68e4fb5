#include "dataload/sample_rng.h"

#include "common/check.h"

namespace tl::data {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

SampleRng::SampleRng(uint64_t seed, int64_t epoch, int64_t index) {
  // The key folds the seed and the epoch; the counter holds the sample index and a block number.
  uint64_t key = splitmix64(seed ^ splitmix64(uint64_t(epoch) + 0x632BE59BD9B4E019ull));
  key_[0] = uint32_t(key);
  key_[1] = uint32_t(key >> 32);
  counter_[0] = 0;
  counter_[1] = 0;
  counter_[2] = uint32_t(uint64_t(index));
  counter_[3] = uint32_t(uint64_t(index) >> 32);
}

void SampleRng::philox4x32x10(const uint32_t counter[4], const uint32_t key[2],
                              uint32_t out[4]) {
  uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kMul0) * c[0];
    uint64_t p1 = uint64_t(kMul1) * c[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  for (int i = 0; i < 4; ++i) out[i] = c[i];
}

void SampleRng::refill() {
  philox4x32x10(counter_, key_, out_);
  if (++counter_[0] == 0) ++counter_[1];
  used_ = 0;
}

uint32_t SampleRng::nextU32() {
  if (used_ == 4) refill();
  return out_[used_++];
}

// The draws are taken in named statements: the operands of one expression are evaluated in an
// unspecified order, and a compiler that picked the other order would change every sample.
uint64_t SampleRng::nextU64() {
  uint64_t high = nextU32();
  uint64_t low = nextU32();
  return (high << 32) | low;
}

double SampleRng::uniform() {
  uint64_t bits = nextU64() >> 11;  // 53 random bits
  return double(bits) * (1.0 / 9007199254740992.0);
}

int64_t SampleRng::uniformInt(int64_t lo, int64_t hi) {
  TL_CHECK_LE(lo, hi);
  // Unsigned arithmetic: hi - lo overflows int64 for wide ranges, and the full range wraps the
  // span to 0.
  const uint64_t span = uint64_t(hi) - uint64_t(lo) + 1;
  if (span == 0) return int64_t(nextU64());
  // Rejection sampling keeps the draw unbiased.
  uint64_t limit = (~uint64_t(0)) - ((~uint64_t(0)) % span);
  while (true) {
    uint64_t r = nextU64();
    if (r < limit) return int64_t(uint64_t(lo) + r % span);
  }
}

}  // namespace tl::data
