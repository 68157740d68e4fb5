#include "runtime/reduce/fixed_point.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/check.h"

namespace tl::reduce::fixed {
namespace {

// Adding 1.5 · 2^52 to a double x with |x| <= 2^51 lands in [2^52, 2^53], where doubles are
// exactly the integers: the addition rounds x to an integer (half to even, the default
// rounding mode), and the integer is the difference of the bit patterns. Unlike llrint this
// vectorises, and it is exact for every |x| <= 2^51 (the endpoint 2^53 included).
constexpr double kRoundingMagic = 6755399441055744.0;
constexpr int kRoundingMagicRangeBits = 51;

// Elements per parallel chunk: large enough that thread start-up does not matter.
constexpr int64_t kGrain = 1 << 16;

// Double-to-float rounding drops the low 29 of the double's 52 fraction bits. A double whose
// dropped bits are within kMidpointWindow of the half-way pattern may lie on the other side of
// a float rounding boundary than the exact mean it approximates (the fast path's error is below
// 3 units in the last place), so such values take the exact path. So do results in float's
// subnormal range, where the rounding position moves.
constexpr uint64_t kDroppedBitsMask = (uint64_t(1) << 29) - 1;
constexpr uint64_t kHalfWay = uint64_t(1) << 28;
constexpr uint64_t kMidpointWindow = 8;

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

uint64_t bitsOf(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

const uint64_t kMinNormalFloatAsDoubleBits = bitsOf(double(FLT_MIN));

inline bool needsExactPath(double approx) {
  const uint64_t bits = bitsOf(approx);
  const uint64_t dropped = bits & kDroppedBitsMask;
  const bool nearMidpoint = dropped - (kHalfWay - kMidpointWindow) <= 2 * kMidpointWindow;
  const uint64_t magnitude = bits & ~(uint64_t(1) << 63);
  const bool subnormalFloat = magnitude != 0 && magnitude < kMinNormalFloatAsDoubleBits;
  return nearMidpoint || subnormalFloat;
}

template <Accumulate kMode>
uint32_t quantiseRange(const float* g, uint64_t* acc, int64_t count, double scale) {
  const uint64_t magicBits = bitsOf(kRoundingMagic);
  uint32_t maxBits = 0;
  for (int64_t i = 0; i < count; ++i) {
    maxBits = std::max(maxBits, bitsOf(g[i]) & 0x7fffffffu);
    if constexpr (kMode != Accumulate::MaxOnly) {
      // double(g) · 2^e is exact; unsigned arithmetic so that garbage (overflowing steps,
      // discarded later) wraps instead of being undefined.
      const uint64_t q = bitsOf(double(g[i]) * scale + kRoundingMagic) - magicBits;
      if constexpr (kMode == Accumulate::Store) acc[i] = q;
      else acc[i] += q;
    }
  }
  return maxBits;
}

void dequantiseRange(const int64_t* sum, float* out, int64_t count, int64_t contributions, int e,
                     double factor) {
  constexpr int64_t kBlock = 1024;
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const int64_t end = std::min(count, begin + kBlock);
    bool anyHard = false;
    for (int64_t i = begin; i < end; ++i) {
      const double approx = double(sum[i]) * factor;
      out[i] = float(approx);
      anyHard |= needsExactPath(approx);
    }
    if (!anyHard) continue;  // the common case: about 2^-25 of the values are hard
    for (int64_t i = begin; i < end; ++i) {
      if (needsExactPath(double(sum[i]) * factor)) out[i] = exactMean(sum[i], contributions, e);
    }
  }
}

double meanFactor(int64_t contributions, int e) {
  return std::ldexp(1.0 / double(contributions), -e);
}

}  // namespace

int valueBits(int64_t contributions) {
  TL_CHECK_GE(contributions, 1);
  TL_CHECK_LE(contributions, kMaxContributions, "too many contributions for the exact reduction");
  int ceilLog2 = 0;
  while ((int64_t(1) << ceilLog2) < contributions) ++ceilLog2;
  return std::min(kRoundingMagicRangeBits, 62 - ceilLog2);
}

int scaleExponent(double maxAbs, int64_t contributions) {
  TL_CHECK(maxAbs > 0 && std::isfinite(maxAbs), "scale for max |g| = ", maxAbs);
  int exponent = 0;
  std::frexp(maxAbs, &exponent);  // maxAbs in [2^(exponent-1), 2^exponent)
  return valueBits(contributions) - kHeadroomBits - exponent;
}

Fit checkFit(double maxAbs, int e, int64_t contributions) {
  if (maxAbs == 0) return Fit::Ok;
  const double largest = std::ldexp(maxAbs, e);
  if (!(largest <= std::ldexp(1.0, valueBits(contributions)))) return Fit::Overflow;
  if (largest < std::ldexp(1.0, kMinPrecisionBits - 1)) return Fit::TooCoarse;
  return Fit::Ok;
}

float magnitudeFromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t quantise(const float* g, int64_t* acc, int64_t count, int e, Accumulate mode) {
  const double scale = std::ldexp(1.0, e);
  auto* wrapping = reinterpret_cast<uint64_t*>(acc);
  std::atomic<uint32_t> maxBits{0};
  at::parallel_for(0, count, kGrain, [&](int64_t begin, int64_t end) {
    uint32_t chunkMax = 0;
    switch (mode) {
      case Accumulate::MaxOnly:
        chunkMax = quantiseRange<Accumulate::MaxOnly>(g + begin, nullptr, end - begin, scale);
        break;
      case Accumulate::Store:
        chunkMax = quantiseRange<Accumulate::Store>(g + begin, wrapping + begin, end - begin, scale);
        break;
      case Accumulate::Add:
        chunkMax = quantiseRange<Accumulate::Add>(g + begin, wrapping + begin, end - begin, scale);
        break;
    }
    uint32_t seen = maxBits.load();
    while (chunkMax > seen && !maxBits.compare_exchange_weak(seen, chunkMax)) {
    }
  });
  return maxBits.load();
}

uint32_t quantise(const at::Tensor& g, const at::Tensor& acc, int e, Accumulate mode) {
  TL_CHECK_EQ(g.scalar_type(), at::kFloat);
  TL_CHECK_EQ(acc.scalar_type(), at::kLong);
  TL_CHECK_EQ(g.numel(), acc.numel());
  TL_CHECK(acc.is_contiguous());
  if (g.numel() == 0) return 0;
  at::Tensor flat = g.reshape({-1});
  // NaN propagates through max, so the bits classify it like the raw loop does.
  const uint32_t maxBits = bitsOf(flat.abs().max().item<float>()) & 0x7fffffffu;
  const double largest = std::ldexp(double(magnitudeFromBits(maxBits)), e);
  // Out-of-range values would make the conversion to int64 undefined; the step is discarded
  // anyway, so leave the accumulator alone.
  const bool outOfRange = maxBits >= kInfBits || largest > std::ldexp(1.0, kRoundingMagicRangeBits);
  if (mode == Accumulate::MaxOnly || outOfRange) return maxBits;
  // Same integers as the raw loop: the product is exact, round_ is half to even.
  at::Tensor q = flat.to(at::kDouble).mul_(std::ldexp(1.0, e)).round_().to(at::kLong);
  at::Tensor accFlat = acc.view({-1});
  if (mode == Accumulate::Store) accFlat.copy_(q);
  else accFlat.add_(q);
  return maxBits;
}

void dequantiseMean(const int64_t* sum, float* out, int64_t count, int64_t contributions, int e) {
  const double factor = meanFactor(contributions, e);
  at::parallel_for(0, count, kGrain, [&](int64_t begin, int64_t end) {
    dequantiseRange(sum + begin, out + begin, end - begin, contributions, e, factor);
  });
}

void dequantiseMean(const at::Tensor& sum, const at::Tensor& out, int64_t contributions, int e) {
  TL_CHECK_EQ(sum.scalar_type(), at::kLong);
  TL_CHECK_EQ(out.scalar_type(), at::kFloat);
  TL_CHECK_EQ(sum.numel(), out.numel());
  TL_CHECK(sum.is_contiguous());
  at::Tensor flatSum = sum.view({-1});
  at::Tensor approx = flatSum.to(at::kDouble).mul_(meanFactor(contributions, e));
  at::Tensor bits = approx.view(at::kLong);
  at::Tensor dropped = bits.bitwise_and(int64_t(kDroppedBitsMask));
  at::Tensor magnitude = bits.bitwise_and(std::numeric_limits<int64_t>::max());
  at::Tensor hard =
      dropped.ge(int64_t(kHalfWay - kMidpointWindow))
          .logical_and_(dropped.le(int64_t(kHalfWay + kMidpointWindow)))
          .logical_or_(magnitude.gt(0).logical_and_(magnitude.lt(int64_t(kMinNormalFloatAsDoubleBits))));
  at::Tensor result = approx.to(at::kFloat);
  at::Tensor hardIndex = hard.nonzero().view({-1});
  if (hardIndex.numel() > 0) {
    at::Tensor hardSums = flatSum.index_select(0, hardIndex).cpu();
    at::Tensor exact = at::empty({hardSums.numel()}, at::kFloat);
    const int64_t* s = hardSums.data_ptr<int64_t>();
    float* x = exact.data_ptr<float>();
    for (int64_t i = 0; i < hardSums.numel(); ++i) x[i] = exactMean(s[i], contributions, e);
    result.index_copy_(0, hardIndex, exact.to(result.device()));
  }
  out.copy_(result.view(out.sizes()));
}

float exactMean(int64_t sum, int64_t contributions, int e) {
  TL_CHECK_GE(contributions, 1);
  TL_CHECK_LE(contributions, kMaxContributions);
  if (sum == 0) return 0.0f;
  const bool negative = sum < 0;
  uint64_t magnitude = negative ? uint64_t(0) - uint64_t(sum) : uint64_t(sum);
  // Left-align so the quotient keeps at least 63 - 20 bits whatever the sum's size.
  const int lead = __builtin_clzll(magnitude);
  magnitude <<= lead;
  const uint64_t quotient = magnitude / uint64_t(contributions);
  const uint64_t remainder = magnitude % uint64_t(contributions);
  const int quotientBits = 64 - __builtin_clzll(quotient);
  const int dropped = std::max(0, quotientBits - 53);
  uint64_t mantissa = quotient >> dropped;
  const bool inexact = remainder != 0 || (quotient & ((uint64_t(1) << dropped) - 1)) != 0;
  // Round to odd at >= 43 bits: a later round-to-nearest to float's 24 bits is then the
  // correct rounding of the exact quotient (no double-rounding error).
  if (inexact) mantissa |= 1;
  const float rounded = float(std::ldexp(double(mantissa), dropped - lead - e));
  return negative ? -rounded : rounded;
}

}  // namespace tl::reduce::fixed
