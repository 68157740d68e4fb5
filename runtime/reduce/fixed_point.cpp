#include "runtime/reduce/fixed_point.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

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

double doubleFromBits(uint64_t b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

// int64 to double by bit arithmetic, exact for |s| <= 2^51 (the rounding trick backwards).
// Unlike the conversion instruction it vectorises on every x86-64.
inline double smallToDouble(int64_t s) {
  return doubleFromBits(bitsOf(kRoundingMagic) + uint64_t(s)) - kRoundingMagic;
}

inline uint64_t beyondSmall(int64_t s) {  // |s| > 2^51
  return uint64_t(s) + (uint64_t(1) << 51) > (uint64_t(1) << 52) ? 1 : 0;
}

// The raw loops are compiled twice on x86-64: for the baseline (SSE2, two doubles per
// instruction) and with AVX2 (four), picked once at run time. The division of dequantisation
// is the bottleneck without AVX2 (ResNet-18's 11.2M values took 14.5 ms, 6.4 ms with it). Both
// builds give the same bits: vector IEEE multiplications, additions, divisions and conversions
// round exactly like scalar ones, and FMA is not enabled, so no multiply-add is contracted.
#if defined(__x86_64__) && defined(__GNUC__)
#define TL_FIXED_POINT_AVX2 1
#define TL_INLINE_LOOP inline __attribute__((always_inline))
#else
#define TL_FIXED_POINT_AVX2 0
#define TL_INLINE_LOOP inline
#endif

template <Accumulate kMode>
TL_INLINE_LOOP uint32_t quantiseLoop(const float* g, uint64_t* acc, int64_t count, double scale) {
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

// The fast loop: whether some sum needs exactMean instead.
TL_INLINE_LOOP uint64_t dequantiseLoop(const int64_t* sum, float* out, int64_t count,
                                       double divisor) {
  uint64_t anyLarge = 0;
  for (int64_t i = 0; i < count; ++i) {
    out[i] = float(smallToDouble(sum[i]) / divisor);
    anyLarge |= beyondSmall(sum[i]);
  }
  return anyLarge;
}

// One compiled form of both loops: what Kernels holds pointers to.
template <Accumulate kMode>
uint32_t quantiseBaseline(const float* g, uint64_t* acc, int64_t count, double scale) {
  return quantiseLoop<kMode>(g, acc, count, scale);
}
uint64_t dequantiseBaseline(const int64_t* sum, float* out, int64_t count, double divisor) {
  return dequantiseLoop(sum, out, count, divisor);
}
#if TL_FIXED_POINT_AVX2
template <Accumulate kMode>
__attribute__((target("avx2"))) uint32_t quantiseAvx2(const float* g, uint64_t* acc, int64_t count,
                                                      double scale) {
  return quantiseLoop<kMode>(g, acc, count, scale);
}
__attribute__((target("avx2"))) uint64_t dequantiseAvx2(const int64_t* sum, float* out,
                                                        int64_t count, double divisor) {
  return dequantiseLoop(sum, out, count, divisor);
}
#endif

struct Kernels {
  uint32_t (*quantise[3])(const float*, uint64_t*, int64_t, double);  // by Accumulate
  uint64_t (*dequantise)(const int64_t*, float*, int64_t, double);
};

constexpr Kernels kBaseline = {{quantiseBaseline<Accumulate::MaxOnly>,
                                quantiseBaseline<Accumulate::Store>,
                                quantiseBaseline<Accumulate::Add>},
                               dequantiseBaseline};

const Kernels& fastestKernels() {
#if TL_FIXED_POINT_AVX2
  static const Kernels avx2 = {{quantiseAvx2<Accumulate::MaxOnly>, quantiseAvx2<Accumulate::Store>,
                                quantiseAvx2<Accumulate::Add>},
                               dequantiseAvx2};
  static const bool hasAvx2 = __builtin_cpu_supports("avx2");
  if (hasAvx2) return avx2;
#endif
  return kBaseline;
}

uint32_t quantiseWith(const Kernels& kernels, const float* g, int64_t* acc, int64_t count, int e,
                      Accumulate mode) {
  const double scale = std::ldexp(1.0, e);
  auto* wrapping = reinterpret_cast<uint64_t*>(acc);
  const auto loop = kernels.quantise[static_cast<int>(mode)];
  std::atomic<uint32_t> maxBits{0};
  at::parallel_for(0, count, kGrain, [&](int64_t begin, int64_t end) {
    const uint32_t chunkMax =
        loop(g + begin, wrapping ? wrapping + begin : nullptr, end - begin, scale);
    uint32_t seen = maxBits.load();
    while (chunkMax > seen && !maxBits.compare_exchange_weak(seen, chunkMax)) {
    }
  });
  return maxBits.load();
}

// The mean as float(double(sum) / (N · 2^e)): for |sum| <= 2^53 the division is the correctly
// rounded double quotient d, and then float(d) is the correctly rounded float quotient.
// Rounding twice can only err when d lands on a float midpoint m that the exact quotient
// v = sum / (N · 2^e) misses, which needs |v - m| <= ulp_double(m) / 2 with v != m. It cannot
// happen here: m = (2F + 1) · 2^(j-1) (2^j the float spacing at m), so m · N · 2^e is a
// multiple of 2^min(0, j-1+e), and so is the integer sum; their distance is at least that
// step, i.e. |v - m| >= min(1 / (N · 2^e), 2^(j-1) / N). The first bound exceeds |v| · 2^-53
// >= ulp_double(m) / 2 since |sum| <= 2^53 (m is no power of two, subnormal midpoints aside,
// which pass too); the second exceeds 2^(j-21) > 2^(j-30) >= ulp_double(m) / 2 since m has at
// most 25 significant bits and N <= 2^20. (A multiplication by the rounded reciprocal would
// not do: it misses exact ties.) The loop converts with smallToDouble, so sums beyond 2^51,
// only seen near the range limit, take exactMean.
void dequantiseWith(const Kernels& kernels, const int64_t* sum, float* out, int64_t count,
                    int64_t contributions, int e) {
  TL_CHECK_GE(contributions, 1);
  TL_CHECK_LE(contributions, kMaxContributions);
  const double divisor = std::ldexp(double(contributions), e);  // exact
  at::parallel_for(0, count, kGrain, [&](int64_t begin, int64_t end) {
    if (kernels.dequantise(sum + begin, out + begin, end - begin, divisor) == 0) return;
    for (int64_t i = begin; i < end; ++i) {
      if (beyondSmall(sum[i])) out[i] = exactMean(sum[i], contributions, e);
    }
  });
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
  return quantiseWith(fastestKernels(), g, acc, count, e, mode);
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
  dequantiseWith(fastestKernels(), sum, out, count, contributions, e);
}

void dequantiseMean(const at::Tensor& sum, const at::Tensor& out, int64_t contributions, int e) {
  TL_CHECK_EQ(sum.scalar_type(), at::kLong);
  TL_CHECK_EQ(out.scalar_type(), at::kFloat);
  TL_CHECK_EQ(sum.numel(), out.numel());
  TL_CHECK(sum.is_contiguous());
  TL_CHECK_GE(contributions, 1);
  TL_CHECK_LE(contributions, kMaxContributions);
  at::Tensor flatSum = sum.view({-1});
  // The divisor as a tensor on the sums' device, not as a scalar: CUDA divides by a CPU scalar
  // through its reciprocal, which is not the correctly rounded quotient.
  at::Tensor divisor = at::full({}, std::ldexp(double(contributions), e), flatSum.options().dtype(at::kDouble));
  at::Tensor result = flatSum.to(at::kDouble).div_(divisor).to(at::kFloat);
  const int64_t exactLimit = int64_t(1) << 53;  // int64 to double is exact up to here
  at::Tensor largeIndex = flatSum.gt(exactLimit).logical_or_(flatSum.lt(-exactLimit)).nonzero().view({-1});
  if (largeIndex.numel() > 0) {  // rare: computed exactly on the CPU
    at::Tensor largeSums = flatSum.index_select(0, largeIndex).cpu();
    at::Tensor exact = at::empty({largeSums.numel()}, at::kFloat);
    const int64_t* s = largeSums.data_ptr<int64_t>();
    float* x = exact.data_ptr<float>();
    for (int64_t i = 0; i < largeSums.numel(); ++i) x[i] = exactMean(s[i], contributions, e);
    result.index_copy_(0, largeIndex, exact.to(result.device()));
  }
  out.copy_(result.view(out.sizes()));
}

namespace detail {

uint32_t quantiseBaseline(const float* g, int64_t* acc, int64_t count, int e, Accumulate mode) {
  return quantiseWith(kBaseline, g, acc, count, e, mode);
}

void dequantiseMeanBaseline(const int64_t* sum, float* out, int64_t count, int64_t contributions,
                            int e) {
  dequantiseWith(kBaseline, sum, out, count, contributions, e);
}

}  // namespace detail

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
