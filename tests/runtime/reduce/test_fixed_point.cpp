// The exact reduction's arithmetic: quantisation rounds half to even, the mean is the exact
// rational sum / (N · 2^e) rounded once, and the raw CPU loops and the generic ATen path agree
// in every bit.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/reduce/fixed_point.h"

namespace tl::reduce::fixed {
namespace {

using Int128 = __int128;

std::vector<int64_t> quantiseBoth(const std::vector<float>& values, int e) {
  at::Tensor g = at::tensor(values, at::kFloat);
  at::Tensor raw = at::zeros({g.numel()}, at::kLong);
  at::Tensor generic = at::zeros({g.numel()}, at::kLong);
  quantise(g.data_ptr<float>(), raw.data_ptr<int64_t>(), g.numel(), e, Accumulate::Store);
  quantise(g, generic, e, Accumulate::Store);
  EXPECT_TRUE(raw.equal(generic)) << "raw loop and ATen path disagree";
  return std::vector<int64_t>(raw.data_ptr<int64_t>(), raw.data_ptr<int64_t>() + raw.numel());
}

TEST(FixedPoint, QuantisationRoundsHalfToEven) {
  EXPECT_EQ(quantiseBoth({0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, 0.25f, 0.75f, -0.75f, 3.0f}, 0),
            (std::vector<int64_t>{0, 2, 2, 4, 0, -2, -2, 0, 1, -1, 3}));
  // The same halfway cases at a scale: g · 2^10 = 2.5 → 2, 5.5 → 6, -3.5 → -4.
  const float u = std::ldexp(1.0f, -10);
  EXPECT_EQ(quantiseBoth({2.5f * u, 5.5f * u, -3.5f * u, 1e-30f, -1e-30f}, 10),
            (std::vector<int64_t>{2, 6, -4, 0, 0}));
}

TEST(FixedPoint, PowersOfTwoAndRangeLimitsAreExact) {
  // Every power of two a float holds, at the scale that puts it at the top of the range.
  for (int k = -149; k <= 127; ++k) {
    const float g = std::ldexp(1.0f, k);
    const int e = scaleExponent(g, 8);
    const auto q = quantiseBoth({g, -g}, e);
    EXPECT_EQ(q[0], int64_t(1) << (valueBits(8) - kHeadroomBits - 1)) << "2^" << k;
    EXPECT_EQ(q[1], -q[0]);
    float back = 0;
    dequantiseMean(&q[0], &back, 1, 1, e);
    EXPECT_EQ(back, g) << "2^" << k;
  }
  // The rounding trick is exact up to |g · 2^e| = 2^51, its limit.
  EXPECT_EQ(quantiseBoth({std::ldexp(1.0f, 51), -std::ldexp(1.0f, 51), 16777215.0f}, 0),
            (std::vector<int64_t>{int64_t(1) << 51, -(int64_t(1) << 51), 16777215}));
}

TEST(FixedPoint, MaximumReportsMagnitudeAndNonFiniteValues) {
  at::Tensor g = at::tensor(std::vector<float>{1.0f, -3.0f, 2.0f});
  at::Tensor acc = at::zeros({3}, at::kLong);
  EXPECT_EQ(magnitudeFromBits(quantise(g.data_ptr<float>(), acc.data_ptr<int64_t>(), 3, 0, Accumulate::MaxOnly)), 3.0f);
  g[1] = INFINITY;
  EXPECT_EQ(quantise(g.data_ptr<float>(), acc.data_ptr<int64_t>(), 3, 0, Accumulate::Add), kInfBits);
  EXPECT_EQ(quantise(g, acc, 0, Accumulate::Add), kInfBits);
  g[2] = NAN;
  EXPECT_GT(quantise(g.data_ptr<float>(), acc.data_ptr<int64_t>(), 3, 0, Accumulate::Add), kInfBits);
  EXPECT_GT(quantise(g, acc, 0, Accumulate::Add), kInfBits);
}

TEST(FixedPoint, RawAndGenericAgreeOnRandomDataWithAccumulation) {
  std::mt19937_64 rng(7);
  at::Tensor raw = at::zeros({100003}, at::kLong), generic = at::zeros({100003}, at::kLong);
  const int e = 30;
  for (int c = 0; c < 5; ++c) {
    at::Tensor g = at::empty({100003}, at::kFloat);
    for (int64_t i = 0; i < g.numel(); ++i) {
      const uint64_t r = rng();
      g.data_ptr<float>()[i] = float((r & 1 ? -1.0 : 1.0) * std::ldexp(double(r >> 12) / 0x1p52, -int(r % 40)));
    }
    const Accumulate mode = c == 0 ? Accumulate::Store : Accumulate::Add;
    EXPECT_EQ(quantise(g.data_ptr<float>(), raw.data_ptr<int64_t>(), g.numel(), e, mode),
              quantise(g, generic, e, mode));
  }
  EXPECT_TRUE(raw.equal(generic));
}

// The raw loops run as an AVX2 build where the CPU has it: the baseline build must give the
// same bits, so that a job's result does not depend on its machines' instruction sets. Ragged
// lengths reach the vector loops' tails; the values include halfway cases, subnormals, sums
// beyond 2^51 (the slow path) and non-finite gradients.
TEST(FixedPoint, BaselineBuildOfTheLoopsGivesTheSameBits) {
  std::mt19937_64 rng(23);
  for (int64_t count : {1, 3, 7, 64, 100003}) {
    std::vector<float> g(static_cast<size_t>(count));
    for (auto& v : g) {
      const uint64_t r = rng();
      v = float((r & 1 ? -1.0 : 1.0) * std::ldexp(double(r >> 40) + 0.5, -int(r % 180)));
    }
    g[0] = std::ldexp(2.5f, -10);  // a tie at e = 10
    for (int e : {10, 40, 120}) {
      for (Accumulate mode : {Accumulate::MaxOnly, Accumulate::Store, Accumulate::Add}) {
        std::vector<int64_t> fast(size_t(count), 5), baseline(size_t(count), 5);
        EXPECT_EQ(quantise(g.data(), fast.data(), count, e, mode),
                  detail::quantiseBaseline(g.data(), baseline.data(), count, e, mode));
        EXPECT_EQ(fast, baseline) << "count " << count << " e " << e;
      }
    }
    g[size_t(count) / 2] = NAN;
    std::vector<int64_t> fast(static_cast<size_t>(count)), baseline(static_cast<size_t>(count));
    EXPECT_EQ(quantise(g.data(), fast.data(), count, 0, Accumulate::Store),
              detail::quantiseBaseline(g.data(), baseline.data(), count, 0, Accumulate::Store));

    std::vector<int64_t> sums(static_cast<size_t>(count));
    for (auto& s : sums) s = int64_t(rng() >> (1 + rng() % 62)) * (rng() & 1 ? -1 : 1);
    sums[0] = (int64_t(1) << 51) + 1;  // beyond the fast conversion
    for (int64_t n : {1, 2, 3, 7, 8}) {
      for (int e : {-20, 0, 43, 160}) {
        std::vector<float> outFast(static_cast<size_t>(count));
        std::vector<float> outBaseline(static_cast<size_t>(count));
        dequantiseMean(sums.data(), outFast.data(), count, n, e);
        detail::dequantiseMeanBaseline(sums.data(), outBaseline.data(), count, n, e);
        ASSERT_EQ(std::memcmp(outFast.data(), outBaseline.data(), size_t(count) * sizeof(float)), 0)
            << "count " << count << " N " << n << " e " << e;
      }
    }
  }
}

// Reference: the float nearest to sum / (N · 2^e), ties to even, found by exact integer
// comparison among the neighbours of a long-double estimate.
float referenceMean(int64_t sum, int64_t n, int e) {
  if (sum == 0) return 0.0f;
  const float estimate = float(std::ldexp((long double)sum / (long double)n, -e));
  std::vector<float> candidates = {std::nextafter(estimate, -INFINITY), estimate,
                                   std::nextafter(estimate, INFINITY)};
  // Each candidate c = F · 2^k exactly; distances compared as S · 2^-j0 - F · N · 2^(k+e-j0).
  std::vector<Int128> f(3);
  std::vector<int> k(3);
  int j0 = 0;
  for (int i = 0; i < 3; ++i) {
    int exponent;
    std::frexp(candidates[i], &exponent);
    k[i] = candidates[i] == 0 ? 0 : std::max(exponent - 24, -149);
    f[i] = Int128(std::ldexp(double(candidates[i]), -k[i]));
    j0 = std::min(j0, k[i] + e);
  }
  EXPECT_GE(j0, -60) << "reference out of its range";
  int best = 0;
  Int128 bestDistance = -1;
  for (int i = 0; i < 3; ++i) {
    Int128 d = Int128(sum) * (Int128(1) << -j0);  // (a left shift of a negative sum is undefined)
    if (f[i] != 0) d -= f[i] * n * (Int128(1) << (k[i] + e - j0));
    if (d < 0) d = -d;
    const bool even = (f[i] & 1) == 0;
    if (bestDistance < 0 || d < bestDistance || (d == bestDistance && even)) {
      best = i;
      bestDistance = d;
    }
  }
  return candidates[best];
}

void expectMeanMatchesReference(const std::vector<int64_t>& sums, int64_t n, int e) {
  at::Tensor s = at::tensor(sums, at::kLong);
  at::Tensor raw = at::empty({s.numel()}, at::kFloat), generic = at::empty({s.numel()}, at::kFloat);
  dequantiseMean(s.data_ptr<int64_t>(), raw.data_ptr<float>(), s.numel(), n, e);
  dequantiseMean(s, generic, n, e);
  for (size_t i = 0; i < sums.size(); ++i) {
    const float expected = referenceMean(sums[i], n, e);
    ASSERT_EQ(std::memcmp(&expected, raw.data_ptr<float>() + i, 4), 0)
        << "sum " << sums[i] << " N " << n << " e " << e << ": " << raw.data_ptr<float>()[i]
        << " vs " << expected;
    ASSERT_EQ(std::memcmp(&expected, generic.data_ptr<float>() + i, 4), 0) << "generic path";
    ASSERT_EQ(exactMean(sums[i], n, e), expected) << "exact path";
  }
}

TEST(FixedPoint, MeanIsExactQuotientRoundedOnce) {
  std::mt19937_64 rng(11);
  for (int64_t n : {1, 2, 3, 5, 7, 8, 12, 1 << 20}) {
    for (int e : {-20, 0, 17, 43, 90, 160}) {
      std::vector<int64_t> sums = {0, 1, -1, 3, int64_t(1) << 62, -(int64_t(1) << 62) + 12345};
      for (int i = 0; i < 300; ++i) {
        const int64_t s = int64_t(rng() >> (1 + rng() % 62));
        sums.push_back(i % 2 ? -s : s);
      }
      expectMeanMatchesReference(sums, n, e);
    }
  }
}

TEST(FixedPoint, MeanOnAndBesideFloatMidpointsRoundsCorrectly) {
  // sum / (N · 2^e) = (F + 1/2) · 2^k exactly (a tie: to even), or one unit beside it: the
  // cases where a double approximation (or a truncated quotient) can round the wrong way.
  std::mt19937_64 rng(5);
  std::vector<int64_t> sums;
  for (int64_t n : {3, 5, 7, 9, 11, 13, 19, 25, 41, 77, 1001}) {
    sums.clear();
    for (int i = 0; i < 200; ++i) {
      const int64_t f = int64_t((1 << 23) + rng() % (1 << 23));
      // Up to 2^62: there one unit is below a double's resolution of the quotient.
      const int64_t tie = (2 * f + 1) * n * (int64_t(1) << (rng() % 34));
      for (int64_t delta : {-1, 0, 1}) {
        sums.push_back(tie + delta);
        sums.push_back(-(tie + delta));
      }
    }
    expectMeanMatchesReference(sums, n, 0);
    expectMeanMatchesReference(sums, n, 40);
  }
  // Results in float's subnormal range, where the rounding position moves: ties at
  // (F + 1/2) · 2^-149 and one unit beside them (e = 202 puts the unit below double resolution).
  expectMeanMatchesReference({1, 3, 5, -7, 1001, int64_t(1) << 40}, 7, 150);
  for (int64_t n : {3, 5}) {
    sums.clear();
    for (int64_t f = 1; f < 200; f += 3) {
      for (int64_t delta : {-1, 0, 1}) sums.push_back((2 * f + 1) * n * (int64_t(1) << 52) + delta);
    }
    expectMeanMatchesReference(sums, n, 202);
  }
}

// The batched path (quantiseMany, dequantiseMeanMany: what a GPU runs) against the raw loops,
// here on CPU tensors: the same integers, maxima and means, at scales that need one float
// factor, two (e > 126) or a negative one, with ties, subnormals, accumulation over
// contributions and non-finite values.
TEST(FixedPoint, BatchedPathGivesTheLoopsBits) {
  std::mt19937_64 rng(31);
  const std::vector<int64_t> lengths = {1, 7, 4099, 65537};
  const std::vector<std::vector<int>> exponentSets = {{10, 40, 120, 0}, {-20, 126, 127, 192}, {-85, 60, 150, 43}};
  for (const auto& exponents : exponentSets) {
    int64_t total = 0;
    for (int64_t n : lengths) total += n;
    at::Tensor rawAcc = at::zeros({total}, at::kLong), batchedAcc = at::zeros({total}, at::kLong);
    at::Tensor maxBits = at::zeros({int64_t(lengths.size())}, at::kInt);
    std::vector<uint32_t> rawMax(lengths.size(), 0);
    for (int c = 0; c < 3; ++c) {
      std::vector<at::Tensor> grads;
      for (size_t i = 0; i < lengths.size(); ++i) {
        at::Tensor g = at::empty({lengths[i]}, at::kFloat);
        float* v = g.data_ptr<float>();
        for (int64_t k = 0; k < lengths[i]; ++k) {
          const uint64_t r = rng();
          // Magnitudes around 2^(40 - e): q near the top of its range, down to far below 1.
          v[k] = float((r & 1 ? -1.0 : 1.0) * std::ldexp(double(r >> 40) + 0.5, 40 - 24 - exponents[i] - int(r % 60)));
        }
        v[0] = std::ldexp(2.5f, -exponents[i]);  // a tie: 2.5 -> 2
        if (lengths[i] > 2) v[1] = std::ldexp(1.0f, -149);  // the smallest subnormal
        grads.push_back(i == 2 ? g.view({4099, 1}) : g);
      }
      const Accumulate mode = c == 0 ? Accumulate::Store : Accumulate::Add;
      int64_t offset = 0;
      for (size_t i = 0; i < lengths.size(); ++i) {
        const at::Tensor g = grads[i].reshape({-1});
        rawMax[i] = std::max(rawMax[i], quantise(g.data_ptr<float>(), rawAcc.data_ptr<int64_t>() + offset,
                                                 lengths[i], exponents[i], mode));
        offset += lengths[i];
      }
      quantiseMany(grads, batchedAcc, exponents, mode, maxBits);
      ASSERT_TRUE(rawAcc.equal(batchedAcc)) << "contribution " << c << ", exponents " << exponents[1];
      for (size_t i = 0; i < lengths.size(); ++i) EXPECT_EQ(uint32_t(maxBits[int64_t(i)].item<int32_t>()), rawMax[i]);
    }
    // The means, for every sum below 2^53 (beyond 2^51 the loops take their slow path).
    at::Tensor sums = rawAcc.clone();
    sums[0] = (int64_t(1) << 53) - 1;
    sums[1] = -(int64_t(1) << 52) - 12345;
    for (int64_t n : {1, 3, 7, 1 << 20}) {
      at::Tensor raw = at::empty({total}, at::kFloat), batched = at::empty({total}, at::kFloat);
      int64_t offset = 0;
      for (size_t i = 0; i < lengths.size(); ++i) {
        dequantiseMean(sums.data_ptr<int64_t>() + offset, raw.data_ptr<float>() + offset, lengths[i], n, exponents[i]);
        offset += lengths[i];
      }
      dequantiseMeanMany(sums, batched, lengths, exponents, n);
      ASSERT_EQ(std::memcmp(raw.data_ptr<float>(), batched.data_ptr<float>(), size_t(total) * sizeof(float)), 0)
          << "N " << n;
    }
  }
  // MaxOnly leaves the accumulator alone; a non-finite value shows in the maxima as bits.
  at::Tensor acc = at::full({3}, int64_t(5), at::kLong);
  at::Tensor maxBits = at::zeros({2}, at::kInt);
  quantiseMany({at::tensor(std::vector<float>{1.0f, -3.0f}), at::tensor(std::vector<float>{0.5f})}, acc, {0, 0},
               Accumulate::MaxOnly, maxBits);
  EXPECT_TRUE(acc.equal(at::full({3}, int64_t(5), at::kLong)));
  EXPECT_EQ(magnitudeFromBits(uint32_t(maxBits[0].item<int32_t>())), 3.0f);
  quantiseMany({at::tensor(std::vector<float>{INFINITY, 1.0f}), at::tensor(std::vector<float>{NAN})}, acc, {0, 0},
               Accumulate::Add, maxBits);
  EXPECT_EQ(uint32_t(maxBits[0].item<int32_t>()), kInfBits);
  EXPECT_GT(uint32_t(maxBits[1].item<int32_t>()), kInfBits);
}

TEST(FixedPoint, SumsFitDoubleBoundsTheConversion) {
  // N values of at most maxAbs at 2^e sum to at most N · (maxAbs · 2^e + 1/2).
  EXPECT_TRUE(sumsFitDouble(1.0, 43, 1));
  EXPECT_TRUE(sumsFitDouble(1.0, 51, 3));
  EXPECT_FALSE(sumsFitDouble(1.0, 51, 5));
  EXPECT_FALSE(sumsFitDouble(NAN, 0, 1));
  EXPECT_TRUE(sumsFitDouble(0.0, 0, 1 << 20));
}

TEST(FixedPoint, ScaleLeavesHeadroomAndDetectsMisfits) {
  const int e = scaleExponent(3.0, 4);  // 3 · 2^e in [2^42, 2^43)
  EXPECT_EQ(e, 51 - 8 - 2);
  EXPECT_EQ(checkFit(3.0, e, 4), Fit::Ok);
  EXPECT_EQ(checkFit(3.0 * 256, e, 4), Fit::Ok);         // 2^8 growth: within the headroom
  EXPECT_EQ(checkFit(3.0 * 1024, e, 4), Fit::Overflow);  // 2^10: beyond
  EXPECT_EQ(checkFit(3.0 / 65536, e, 4), Fit::Ok);
  EXPECT_EQ(checkFit(3.0 / 262144, e, 4), Fit::TooCoarse);
  EXPECT_EQ(checkFit(0.0, e, 4), Fit::Ok);
  // N contributions at the bound cannot overflow int64: N · 2^valueBits(N) <= 2^62.
  for (int64_t n : {1, 2, 3, 2048, 2049, 4096, 1 << 20}) {
    EXPECT_LE(std::log2(double(n)) + valueBits(n), 62.0) << n;
  }
}

}  // namespace
}  // namespace tl::reduce::fixed
