// A lossless compact encoding of int64 values, for sums that travel between hosts.
//
// The exact reduction's partial sums are int64 fixed-point values (runtime/reduce/fixed_point.h)
// that carry far fewer significant bits than 64: a quantised float32 gradient has 24 mantissa
// bits, so its integer ends in zeros below them, and the scale keeps every value below 2^51, so
// the top bits only repeat the sign. The encoding cuts the values into blocks of kBlock and
// stores, per block, the shift s (the fewest trailing zeros of its values) and the width w (the
// two's-complement bits of the largest value >> s), then every value >> s in w bits:
//
//   block := shift:u8 width:u8 packed
//   packed := the n values' low w bits after >> s, little-endian bit order, ceil(n*w/8) bytes
//
// where n is kBlock except for the last block of a stream. width 0 (shift 0) is a block of
// zeros with nothing packed. Measured on CIFAR ResNet-18 gradients at batch 8, quantised as the
// exact reducer does: 32-33 bits per value with the headers (a sum of two members' values),
// about half of int64's 64, i.e. a reduce-scatter of sums costs about the bytes of a float32 one.
//
// Any int64 round-trips bit for bit (INT64_MIN included); the cost is a pass over the values
// to encode and one to decode. Byte order: that of the host (like the plain int64 path, which
// also assumes members of one byte order).
#pragma once

#include <cstdint>

namespace tl::comm::compact {

inline constexpr std::int64_t kBlock = 32;

// The most bytes encode() writes for `count` values.
std::int64_t maxEncodedBytes(std::int64_t count);

// Encodes values[0, count) into out (at least maxEncodedBytes(count) bytes); returns the bytes
// written.
std::int64_t encode(const std::int64_t* values, std::int64_t count, std::uint8_t* out);

enum class Decode {
  Store,  // out[i] = value
  Add,    // out[i] += value, wrapping like two's complement (as MPI's integer sum)
};

// Decodes `count` values from in[0, bytes) into out; returns the bytes read. tl::Error when the
// stream is not a valid encoding of `count` values within `bytes` (then out may be partly
// written).
std::int64_t decode(const std::uint8_t* in, std::int64_t bytes, std::int64_t count,
                    std::int64_t* out, Decode mode);

}  // namespace tl::comm::compact
