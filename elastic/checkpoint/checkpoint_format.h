// Byte layout of a tl checkpoint file (format version 1), shared by the writer, the reader and
// the tests that build damaged files on purpose.
//
//   offset          size  content
//   0               8     magic "\x89TLCKPT\n" (the \x89 and \n catch text-mode mangling)
//   8               4     format version, uint32 little-endian (1)
//   12              4     index length L, uint32 little-endian
//   16              8     file length F (the whole file, checksum included), uint64 little-endian
//   24              L     index: UTF-8 JSON, see below
//   24 + L          pad   zero bytes up to P = the next multiple of 64
//   P               n     payload: the raw bytes of every tensor, each starting at a multiple of
//                         64 from P, zero bytes in between
//   F - 32          32    SHA-256 of bytes [0, F - 32)
//
// The index is {"byte_order": "little", "manifest": <caller's JSON>, "payload_length": n,
// "tensors": [{"name", "dtype", "shape": [...], "offset", "length"}, ...]} with offsets relative
// to P, and F = P + n + 32. Tensor bytes are the contiguous row-major values in the writer's
// native byte order, which the index records; this build reads little-endian files only.
//
// The fixed header carries the file length so that a truncated file is reported as truncated
// (with both sizes) before anything else is trusted; the checksum covers everything else, so the
// index is parsed only once the file is known to be intact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>
#include <nlohmann/json.hpp>

namespace tl::elastic::format {

inline constexpr char kMagic[8] = {'\x89', 'T', 'L', 'C', 'K', 'P', 'T', '\n'};
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kFixedHeaderBytes = 24;
inline constexpr size_t kChecksumBytes = 32;
inline constexpr size_t kAlignment = 64;

struct FixedHeader {
  uint32_t version = kVersion;
  uint32_t indexLength = 0;
  uint64_t fileLength = 0;
};

// Writes the magic and `header` into out[0, kFixedHeaderBytes).
void encodeFixedHeader(const FixedHeader& header, char* out);
// Reads the fields after the magic from in[0, kFixedHeaderBytes); does not check the magic.
FixedHeader decodeFixedHeader(const char* in);

inline uint64_t alignUp(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
inline uint64_t payloadOffset(uint32_t indexLength) {
  return alignUp(kFixedHeaderBytes + uint64_t(indexLength));
}

// "little" or "big": the byte order of this machine, which is the order tensor bytes are in.
const char* nativeByteOrder();

// Stable names ("float32", "int64", "bool", ...) that do not depend on libtorch's enum values.
// dtypeName returns nullopt for dtypes a checkpoint cannot hold (quantized ones, for instance).
std::optional<std::string> dtypeName(c10::ScalarType type);
std::optional<c10::ScalarType> dtypeFromName(const std::string& name);

// One entry of the tensor index, validated.
struct TensorEntry {
  std::string name;
  c10::ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // relative to the payload start
  uint64_t length = 0;
};

// Checks a parsed index against a payload of `payloadLength` bytes and returns its entries.
// InputError "checkpoint '<path>' has an inconsistent index: ..." for a missing or mistyped
// field, an unknown dtype, a shape whose size does not match the length, a range outside the
// payload, a duplicate name, or a byte order this machine cannot read.
std::vector<TensorEntry> parseIndex(const nlohmann::json& index, uint64_t payloadLength,
                                    const std::string& path);

}  // namespace tl::elastic::format
