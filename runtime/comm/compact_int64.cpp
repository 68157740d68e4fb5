#include "runtime/comm/compact_int64.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"

namespace tl::comm::compact {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the packed bits are stored and loaded as little-endian words");

namespace {

using u128 = unsigned __int128;
constexpr std::int64_t kHeaderBytes = 2;

int bitLength(std::uint64_t x) { return x == 0 ? 0 : 64 - __builtin_clzll(x); }

std::uint64_t lowMask(int width) {
  return width == 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << width) - 1;
}

std::int64_t packedBytes(std::int64_t n, int width) { return (n * width + 7) / 8; }

std::uint8_t* encodeBlock(const std::int64_t* v, int n, std::uint8_t* out) {
  std::uint64_t any = 0;
  std::uint64_t magnitude = 0;  // OR of v ^ sign(v): its bit length, + 1, is the signed width
  for (int i = 0; i < n; ++i) {
    any |= static_cast<std::uint64_t>(v[i]);
    magnitude |= static_cast<std::uint64_t>(v[i] ^ (v[i] >> 63));
  }
  if (any == 0) {
    out[0] = 0;
    out[1] = 0;
    return out + kHeaderBytes;
  }
  const int shift = __builtin_ctzll(any);
  const int width = bitLength(magnitude >> shift) + 1;
  out[0] = static_cast<std::uint8_t>(shift);
  out[1] = static_cast<std::uint8_t>(width);
  out += kHeaderBytes;
  const std::uint64_t mask = lowMask(width);
  // Bits gather in a 64-bit word, written out whenever it fills; a value that straddles two
  // words leaves its high bits in the next.
  std::uint64_t word = 0;
  int filled = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t bits = static_cast<std::uint64_t>(v[i] >> shift) & mask;
    word |= bits << filled;
    filled += width;
    if (filled >= 64) {
      std::memcpy(out, &word, 8);
      out += 8;
      filled -= 64;
      word = filled == 0 ? 0 : bits >> (width - filled);
    }
  }
  const int tail = (filled + 7) / 8;
  std::memcpy(out, &word, static_cast<size_t>(tail));
  return out + tail;
}

template <Decode mode>
const std::uint8_t* decodeBlock(const std::uint8_t* in, const std::uint8_t* end, int n,
                                std::int64_t* out) {
  TL_CHECK_GE(end - in, kHeaderBytes, "compact int64 stream: a block header is cut off");
  const int shift = in[0];
  const int width = in[1];
  in += kHeaderBytes;
  if (width == 0) {
    TL_CHECK_EQ(shift, 0, "compact int64 stream: a block of zeros with a shift");
    if (mode == Decode::Store) std::fill(out, out + n, 0);
    return in;
  }
  TL_CHECK(shift <= 63 && width <= 64 - shift, "compact int64 stream: block shift ", shift,
           " and width ", width, " do not fit 64 bits");
  const std::int64_t bytes = packedBytes(n, width);
  TL_CHECK_GE(end - in, bytes, "compact int64 stream: a block's values are cut off");
  const std::uint8_t* const blockEnd = in + bytes;
  const std::uint64_t mask = lowMask(width);
  const int signShift = 64 - width;
  const auto put = [&](int i, std::uint64_t low) {
    const std::int64_t value = static_cast<std::int64_t>(low << signShift) >> signShift;
    const std::uint64_t shifted = static_cast<std::uint64_t>(value) << shift;
    if (mode == Decode::Store) {
      out[i] = static_cast<std::int64_t>(shifted);
    } else {
      out[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(out[i]) + shifted);
    }
  };
  if (width <= 57 && end - blockEnd >= 8) {
    // Each value from one unaligned 8-byte load at its first byte (its bits then lie within
    // the word): no value waits for the one before. Reads up to 7 bytes past the block, which
    // the stream has.
    for (int i = 0; i < n; ++i) {
      const int bit = i * width;
      std::uint64_t word = 0;
      std::memcpy(&word, in + (bit >> 3), 8);
      put(i, (word >> (bit & 7)) & mask);
    }
    return blockEnd;
  }
  u128 bits = 0;
  int available = 0;
  for (int i = 0; i < n; ++i) {
    if (available < width) {
      std::uint64_t word = 0;
      const auto take = std::min<std::ptrdiff_t>(8, blockEnd - in);
      std::memcpy(&word, in, static_cast<size_t>(take));
      in += take;
      bits |= u128(word) << available;
      available += 8 * static_cast<int>(take);
    }
    put(i, static_cast<std::uint64_t>(bits) & mask);
    bits >>= width;
    available -= width;
  }
  return blockEnd;
}

template <Decode mode>
std::int64_t decodeAll(const std::uint8_t* in, std::int64_t bytes, std::int64_t count,
                       std::int64_t* out) {
  const std::uint8_t* p = in;
  const std::uint8_t* const end = in + bytes;
  for (std::int64_t at = 0; at < count; at += kBlock) {
    p = decodeBlock<mode>(p, end, static_cast<int>(std::min(kBlock, count - at)), out + at);
  }
  return p - in;
}

}  // namespace

std::int64_t maxEncodedBytes(std::int64_t count) {
  TL_CHECK_GE(count, 0, "compact int64: value count");
  return (count + kBlock - 1) / kBlock * kHeaderBytes + count * 8;
}

std::int64_t encode(const std::int64_t* values, std::int64_t count, std::uint8_t* out) {
  TL_CHECK_GE(count, 0, "compact int64: value count");
  std::uint8_t* p = out;
  for (std::int64_t at = 0; at < count; at += kBlock) {
    p = encodeBlock(values + at, static_cast<int>(std::min(kBlock, count - at)), p);
  }
  return p - out;
}

std::int64_t decode(const std::uint8_t* in, std::int64_t bytes, std::int64_t count,
                    std::int64_t* out, Decode mode) {
  TL_CHECK(count >= 0 && bytes >= 0, "compact int64: ", count, " values in ", bytes, " bytes");
  return mode == Decode::Store ? decodeAll<Decode::Store>(in, bytes, count, out)
                               : decodeAll<Decode::Add>(in, bytes, count, out);
}

}  // namespace tl::comm::compact
