// SampleRng: the Philox block against the published vectors, determinism, independence of
// keys, and sanity of the derived distributions.
#include <gtest/gtest.h>

#include <array>
#include <bitset>
#include <cmath>
#include <set>

#include "dataload/sample_rng.h"

namespace tl::data {
namespace {

std::array<uint32_t, 4> philox(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key) {
  std::array<uint32_t, 4> out{};
  SampleRng::philox4x32x10(counter.data(), key.data(), out.data());
  return out;
}

// Known-answer vectors of Random123 (kat_vectors, "philox4x32 10 ...").
TEST(SampleRng, PhiloxBlockMatchesRandom123KnownAnswers) {
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(philox({0, 0, 0, 0}, {0, 0}), (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

std::vector<uint32_t> draws(uint64_t seed, int64_t epoch, int64_t index, int count) {
  SampleRng rng(seed, epoch, index);
  std::vector<uint32_t> values;
  for (int i = 0; i < count; ++i) values.push_back(rng.nextU32());
  return values;
}

TEST(SampleRng, SameKeySameStream) {
  EXPECT_EQ(draws(7, 3, 12345, 1000), draws(7, 3, 12345, 1000));
}

// The stream of one key is part of the data contract: changing it changes every augmented
// sample of every run. These values were printed by this implementation when it was written.
TEST(SampleRng, StreamIsStable) {
  EXPECT_EQ(draws(0, 0, 0, 6), (std::vector<uint32_t>{0x25b207a4, 0xde63c589, 0x9bf71f33, 0x6a446e78,
                                                         0x105b26f6, 0xe599dc8e}));
  EXPECT_EQ(draws(42, 7, 49999, 6), (std::vector<uint32_t>{0x4f16d541, 0xd04cd448, 0x4f4e5e06, 0x9c2b1fab,
                                                              0xfa5eb3f9, 0xc1ec4c2c}));
}

TEST(SampleRng, NeighbouringKeysGiveUnrelatedStreams) {
  // Keys that differ in one component by one: seed, epoch, index, and large indices.
  const std::vector<std::array<int64_t, 3>> keys = {
      {5, 2, 100}, {6, 2, 100}, {5, 3, 100}, {5, 2, 101}, {5, 2, 99},
      {5, 2, int64_t(1) << 32}, {5, 2, (int64_t(1) << 32) + 100}, {5, -1, 100}, {4, 2, 100}};
  std::vector<std::vector<uint32_t>> streams;
  for (const auto& k : keys) streams.push_back(draws(uint64_t(k[0]), k[1], k[2], 64));
  for (size_t a = 0; a < streams.size(); ++a) {
    for (size_t b = a + 1; b < streams.size(); ++b) {
      // About half of the 2048 bits differ between unrelated streams (sd ~ 23).
      int differing = 0;
      for (int i = 0; i < 64; ++i) differing += std::bitset<32>(streams[a][i] ^ streams[b][i]).count();
      EXPECT_NEAR(differing, 1024, 150) << "keys " << a << " and " << b;
    }
  }
  // The first word of 20000 consecutive indices: no repeats expected (P ~ 5% for one).
  std::set<uint32_t> firstWords;
  for (int64_t index = 0; index < 20000; ++index) firstWords.insert(draws(1, 0, index, 1)[0]);
  EXPECT_GE(firstWords.size(), 19998u);
}

TEST(SampleRng, SixtyFourBitDrawIsFirstWordHigh) {
  SampleRng a(3, 1, 4), b(3, 1, 4);
  for (int i = 0; i < 10; ++i) {
    uint64_t high = a.nextU32();
    uint64_t low = a.nextU32();
    EXPECT_EQ(b.nextU64(), (high << 32) | low);
  }
}

// Chi-square statistic of `counts` against equal expected counts.
double chiSquare(const std::vector<int64_t>& counts) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  const double expected = double(total) / double(counts.size());
  double chi = 0;
  for (int64_t c : counts) chi += (double(c) - expected) * (double(c) - expected) / expected;
  return chi;
}

TEST(SampleRng, UniformIsUniformOnTheUnitInterval) {
  SampleRng rng(11, 0, 0);
  std::vector<int64_t> bins(16, 0);
  double sum = 0;
  const int n = 160000;
  for (int i = 0; i < n; ++i) {
    double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    ++bins[size_t(u * 16)];
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  EXPECT_LT(chiSquare(bins), 37.7);  // 15 degrees of freedom, p = 0.001
}

TEST(SampleRng, UniformIntCoversItsRangeEvenly) {
  SampleRng rng(12, 0, 0);
  std::vector<int64_t> counts(9, 0);  // [-4, 4]
  for (int i = 0; i < 90000; ++i) {
    int64_t v = rng.uniformInt(-4, 4);
    ASSERT_GE(v, -4);
    ASSERT_LE(v, 4);
    ++counts[size_t(v + 4)];
  }
  EXPECT_LT(chiSquare(counts), 26.1);  // 8 degrees of freedom, p = 0.001
  EXPECT_EQ(rng.uniformInt(5, 5), 5);
  // Ranges wider than INT64_MAX, and the full 64-bit range (which is just 64 random bits).
  for (int i = 0; i < 1000; ++i) {
    // -3 * 2^61 (written so that no intermediate overflows): the range holds 5 * 2^61 values.
    const int64_t low = -(int64_t(1) << 62) / 2 * 3;
    int64_t wide = rng.uniformInt(low, int64_t(1) << 62);
    ASSERT_GE(wide, low);
    ASSERT_LE(wide, int64_t(1) << 62);
  }
  SampleRng a(14, 0, 0), b(14, 0, 0);
  EXPECT_EQ(a.uniformInt(INT64_MIN, INT64_MAX), int64_t(b.nextU64()));
}

TEST(SampleRng, BernoulliFrequency) {
  SampleRng rng(13, 0, 0);
  int heads = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) heads += rng.bernoulli(0.5);
  EXPECT_NEAR(heads, n / 2, 5 * std::sqrt(n * 0.25));
  SampleRng rng2(13, 0, 1);
  int rare = 0;
  for (int i = 0; i < n; ++i) rare += rng2.bernoulli(0.1);
  EXPECT_NEAR(rare, n / 10, 5 * std::sqrt(n * 0.09));
}

}  // namespace
}  // namespace tl::data
