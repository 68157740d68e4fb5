// The compact int64 encoding (runtime/comm/compact_int64.h): lossless for any value, about half
// of int64's bytes for quantised gradients, and a clear error for a malformed stream.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "common/check.h"
#include "runtime/comm/compact_int64.h"
#include "runtime/comm/mpi/mpi_ring_allreduce.h"

namespace tl::comm::compact {
namespace {

std::vector<std::uint8_t> encoded(const std::vector<std::int64_t>& values) {
  std::vector<std::uint8_t> out(static_cast<size_t>(maxEncodedBytes(std::int64_t(values.size()))));
  out.resize(static_cast<size_t>(encode(values.data(), std::int64_t(values.size()), out.data())));
  return out;
}

// Decoded from the exact bytes, and from a receive slot with stale bytes after the stream (as
// the ring's are: blocks then take the decoder's path that reads whole words past their end).
std::vector<std::int64_t> roundTrip(const std::vector<std::int64_t>& values) {
  const std::vector<std::uint8_t> bytes = encoded(values);
  const auto count = std::int64_t(values.size());
  std::vector<std::int64_t> back(values.size(), 12345);
  EXPECT_EQ(decode(bytes.data(), std::int64_t(bytes.size()), count, back.data(), Decode::Store),
            std::int64_t(bytes.size()));
  std::vector<std::uint8_t> slot = bytes;
  slot.resize(bytes.size() + 64, 0xa5);
  std::vector<std::int64_t> fromSlot(values.size(), 54321);
  EXPECT_EQ(decode(slot.data(), std::int64_t(slot.size()), count, fromSlot.data(), Decode::Store),
            std::int64_t(bytes.size()));
  EXPECT_EQ(fromSlot, back);
  return back;
}

// What the exact reducer puts in its buckets: round(g * 2^e) of float32 gradients whose largest
// magnitude sits near 2^43 (fixed_point.h), over a spread of `binades` below it.
std::vector<std::int64_t> quantisedGradients(std::int64_t count, int binades, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> mantissa(0.0f, 1.0f);
  std::uniform_int_distribution<int> below(0, binades);
  std::vector<std::int64_t> values;
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = std::ldexp(mantissa(rng), -below(rng));
    values.push_back(std::llrint(std::ldexp(double(g), 41)));
  }
  return values;
}

TEST(CompactInt64, EveryValueRoundTripsBitForBit) {
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  const std::vector<std::vector<std::int64_t>> cases = {
      {},
      {0},
      {kMin},
      {kMax},
      {kMin, kMax, -1, 0, 1},
      std::vector<std::int64_t>(32, kMin),
      std::vector<std::int64_t>(33, -1),
      std::vector<std::int64_t>(70, 0),
      {std::int64_t(1) << 62, -(std::int64_t(1) << 62), std::int64_t(3) << 40},
  };
  for (const auto& values : cases) EXPECT_EQ(roundTrip(values), values);
  std::mt19937_64 rng(7);
  for (std::int64_t count : {1, 31, 32, 33, 64, 95, 1000}) {
    for (int bits : {1, 2, 7, 24, 45, 63, 64}) {  // values of every width, at random shifts
      std::vector<std::int64_t> values;
      for (std::int64_t i = 0; i < count; ++i) {
        const std::uint64_t raw = rng();
        const std::int64_t v = bits == 64
                                   ? static_cast<std::int64_t>(raw)
                                   : static_cast<std::int64_t>(raw << (64 - bits)) >> (64 - bits);
        const int shift = static_cast<int>(rng() % static_cast<std::uint64_t>(65 - bits));
        values.push_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(v) << shift));
      }
      EXPECT_EQ(roundTrip(values), values) << count << " values of " << bits << " bits";
    }
  }
  const auto gradients = quantisedGradients(4099, 12, 3);
  EXPECT_EQ(roundTrip(gradients), gradients);
}

TEST(CompactInt64, AddWrapsLikeTwosComplement) {
  const std::vector<std::int64_t> values = {std::numeric_limits<std::int64_t>::max(), -5, 7, 0,
                                            std::numeric_limits<std::int64_t>::min()};
  std::vector<std::int64_t> into = {1, 5, -7, 42, -1};
  const auto bytes = encoded(values);
  decode(bytes.data(), std::int64_t(bytes.size()), std::int64_t(values.size()), into.data(),
         Decode::Add);
  EXPECT_EQ(into, (std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), 0, 0, 42,
                                             std::numeric_limits<std::int64_t>::max()}));
}

// The point of the encoding: quantised gradients need about half of int64's bytes, and a block
// of zeros only its header.
TEST(CompactInt64, QuantisedGradientsTakeAboutHalfOfInt64sBytes) {
  const std::int64_t count = 1 << 16;
  const double ratio = double(encoded(quantisedGradients(count, 8, 1)).size()) / double(8 * count);
  EXPECT_LT(ratio, 0.6);
  EXPECT_GT(ratio, 0.4);  // 24 significant bits and a spread cannot take much less
  EXPECT_EQ(encoded(std::vector<std::int64_t>(320, 0)).size(), 20u);
  EXPECT_EQ(maxEncodedBytes(33), 2 * 2 + 33 * 8);
}

TEST(CompactInt64, MalformedStreamsAreRefusedWithoutReadingPastThem) {
  const auto values = quantisedGradients(100, 8, 2);
  const auto bytes = encoded(values);
  std::vector<std::int64_t> out(values.size());
  for (size_t cut : {size_t(0), size_t(1), size_t(2), bytes.size() / 2, bytes.size() - 1}) {
    // A copy just as long as the cut, so that a read past it is a heap overflow under sanitizers.
    std::vector<std::uint8_t> part(bytes.begin(), bytes.begin() + std::ptrdiff_t(cut));
    EXPECT_THROW(decode(part.data(), std::int64_t(part.size()), std::int64_t(values.size()),
                        out.data(), Decode::Store),
                 Error)
        << "cut at " << cut << " of " << bytes.size();
  }
  std::vector<std::uint8_t> wide = bytes;
  wide[0] = 30;  // shift 30 with the block's width (> 34): past 64 bits
  EXPECT_THROW(decode(wide.data(), std::int64_t(wide.size()), std::int64_t(values.size()),
                      out.data(), Decode::Store),
               Error);
  const std::vector<std::uint8_t> shiftedZeros = {5, 0};
  EXPECT_THROW(decode(shiftedZeros.data(), 2, 1, out.data(), Decode::Store), Error);
  // Random bytes: an error or some values, never a crash or a read past the end.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::uint8_t> noise(rng() % 300);
    for (auto& b : noise) b = static_cast<std::uint8_t>(rng());
    const std::int64_t count = rng() % 80;
    std::vector<std::int64_t> into(static_cast<size_t>(count));
    try {
      EXPECT_LE(decode(noise.data(), std::int64_t(noise.size()), count, into.data(), Decode::Add),
                std::int64_t(noise.size()));
    } catch (const Error&) {
    }
  }
}

// TL_RING_ENCODING overrides Auto only, and a value it does not know is one clear error.
TEST(RingEncoding, TheEnvironmentOverridesAutoOnly) {
  using detail::ringEncodingFromEnvironment;
  unsetenv("TL_RING_ENCODING");
  EXPECT_EQ(ringEncodingFromEnvironment(RingEncoding::Auto), RingEncoding::Auto);
  setenv("TL_RING_ENCODING", "plain", 1);
  EXPECT_EQ(ringEncodingFromEnvironment(RingEncoding::Auto), RingEncoding::Plain);
  EXPECT_EQ(ringEncodingFromEnvironment(RingEncoding::Compact), RingEncoding::Compact);
  setenv("TL_RING_ENCODING", "compact", 1);
  EXPECT_EQ(ringEncodingFromEnvironment(RingEncoding::Auto), RingEncoding::Compact);
  EXPECT_EQ(ringEncodingFromEnvironment(RingEncoding::Plain), RingEncoding::Plain);
  setenv("TL_RING_ENCODING", "zip", 1);
  try {
    ringEncodingFromEnvironment(RingEncoding::Auto);
    ADD_FAILURE() << "TL_RING_ENCODING=zip was taken";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "TL_RING_ENCODING is 'zip'; it takes auto, compact or plain");
  }
  unsetenv("TL_RING_ENCODING");
}

}  // namespace
}  // namespace tl::comm::compact
