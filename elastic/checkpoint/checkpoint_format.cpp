#include "elastic/checkpoint/checkpoint_format.h"

#include <c10/core/ScalarType.h>

#include <cstring>
#include <limits>
#include <unordered_set>
#include <utility>

#include "common/check.h"

namespace tl::elastic::format {
namespace {

// Explicit little-endian encoding keeps the fixed header readable on any machine, so a reader
// can always tell "wrong byte order" from "corrupt".
void putLittleEndian(uint64_t value, int bytes, char* out) {
  for (int i = 0; i < bytes; ++i) out[i] = char(uint8_t(value >> (8 * i)));
}

uint64_t getLittleEndian(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t(uint8_t(in[i])) << (8 * i);
  return value;
}

// The names are part of the file format: never rename one, only add.
const std::pair<c10::ScalarType, const char*> kDtypeNames[] = {
    {c10::ScalarType::Float, "float32"},        {c10::ScalarType::Double, "float64"},
    {c10::ScalarType::Half, "float16"},         {c10::ScalarType::BFloat16, "bfloat16"},
    {c10::ScalarType::ComplexFloat, "complex64"}, {c10::ScalarType::ComplexDouble, "complex128"},
    {c10::ScalarType::Char, "int8"},            {c10::ScalarType::Short, "int16"},
    {c10::ScalarType::Int, "int32"},            {c10::ScalarType::Long, "int64"},
    {c10::ScalarType::Byte, "uint8"},           {c10::ScalarType::Bool, "bool"},
};

template <typename... Args>
[[noreturn]] void inconsistentIndex(const std::string& path, const Args&... what) {
  inputError("checkpoint '", path, "' has an inconsistent index: ", what...);
}

const nlohmann::json& field(const nlohmann::json& object, const char* key,
                            const std::string& where, const std::string& path) {
  auto it = object.find(key);
  if (it == object.end()) inconsistentIndex(path, where, " has no '", key, "'");
  return *it;
}

uint64_t unsignedField(const nlohmann::json& object, const char* key, const std::string& where,
                       const std::string& path) {
  const auto& value = field(object, key, where, path);
  if (!value.is_number_unsigned()) {
    inconsistentIndex(path, where, " has '", key, "' = ", value.dump(),
                      ", not a non-negative integer");
  }
  return value.get<uint64_t>();
}

std::string stringField(const nlohmann::json& object, const char* key, const std::string& where,
                        const std::string& path) {
  const auto& value = field(object, key, where, path);
  if (!value.is_string())
    inconsistentIndex(path, where, " has '", key, "' = ", value.dump(), ", not a string");
  return value.get<std::string>();
}

TensorEntry parseEntry(const nlohmann::json& json, size_t position, uint64_t payloadLength,
                       const std::string& path) {
  std::string where = str("tensor #", position);
  if (!json.is_object()) inconsistentIndex(path, where, " is not an object");
  TensorEntry entry;
  entry.name = stringField(json, "name", where, path);
  where = str("tensor '", entry.name, "'");

  std::string dtype = stringField(json, "dtype", where, path);
  auto type = dtypeFromName(dtype);
  if (!type) inconsistentIndex(path, where, " has unknown dtype '", dtype, "'");
  entry.dtype = *type;

  const auto& shape = field(json, "shape", where, path);
  if (!shape.is_array()) inconsistentIndex(path, where, " has a shape that is not a list");
  // Byte count = product of the dims × element size, computed without overflow: a forged shape
  // must not make the length check pass by wrapping around.
  uint64_t bytes = c10::elementSize(entry.dtype);
  for (const auto& dim : shape) {
    if (!dim.is_number_unsigned() || dim.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
      inconsistentIndex(path, where, " has a shape dimension ", dim.dump(),
                        ", not a non-negative integer");
    }
    uint64_t size = dim.get<uint64_t>();
    entry.shape.push_back(int64_t(size));
    if (__builtin_mul_overflow(bytes, size, &bytes)) {
      inconsistentIndex(path, where, " has shape ", shape.dump(), ", too large to be real");
    }
  }

  entry.offset = unsignedField(json, "offset", where, path);
  entry.length = unsignedField(json, "length", where, path);
  if (bytes != entry.length) {
    inconsistentIndex(path, where, " of dtype ", dtype, " and shape ", shape.dump(), " needs ",
                      bytes, " bytes but the index gives ", entry.length);
  }
  if (entry.offset > payloadLength || entry.length > payloadLength - entry.offset) {
    inconsistentIndex(path, where, " occupies bytes [", entry.offset, ", ", entry.offset, " + ",
                      entry.length, ") of a payload of ", payloadLength, " bytes");
  }
  return entry;
}

}  // namespace

void encodeFixedHeader(const FixedHeader& header, char* out) {
  std::memcpy(out, kMagic, sizeof(kMagic));
  putLittleEndian(header.version, 4, out + 8);
  putLittleEndian(header.indexLength, 4, out + 12);
  putLittleEndian(header.fileLength, 8, out + 16);
}

FixedHeader decodeFixedHeader(const char* in) {
  FixedHeader header;
  header.version = uint32_t(getLittleEndian(in + 8, 4));
  header.indexLength = uint32_t(getLittleEndian(in + 12, 4));
  header.fileLength = getLittleEndian(in + 16, 8);
  return header;
}

const char* nativeByteOrder() {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return "big";
#else
  return "little";
#endif
}

std::optional<std::string> dtypeName(c10::ScalarType type) {
  for (const auto& [candidate, name] : kDtypeNames) {
    if (candidate == type) return std::string(name);
  }
  return std::nullopt;
}

std::optional<c10::ScalarType> dtypeFromName(const std::string& name) {
  for (const auto& [type, candidate] : kDtypeNames) {
    if (name == candidate) return type;
  }
  return std::nullopt;
}

std::vector<TensorEntry> parseIndex(const nlohmann::json& index, uint64_t payloadLength,
                                    const std::string& path) {
  if (!index.is_object()) inconsistentIndex(path, "the index is not a JSON object");
  std::string byteOrder = stringField(index, "byte_order", "the index", path);
  if (byteOrder != "little" && byteOrder != "big") {
    inconsistentIndex(path, "unknown byte order '", byteOrder, "'");
  }
  if (byteOrder != nativeByteOrder()) {
    inputError("checkpoint '", path, "' holds ", byteOrder, "-endian tensors, but this machine is ",
               nativeByteOrder(), "-endian");
  }
  field(index, "manifest", "the index", path);
  uint64_t declaredPayload = unsignedField(index, "payload_length", "the index", path);
  if (declaredPayload != payloadLength) {
    inconsistentIndex(path, "payload_length is ", declaredPayload, " but the file holds ",
                      payloadLength, " payload bytes");
  }
  const auto& tensors = field(index, "tensors", "the index", path);
  if (!tensors.is_array()) inconsistentIndex(path, "'tensors' is not a list");

  std::vector<TensorEntry> entries;
  entries.reserve(tensors.size());
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < tensors.size(); ++i) {
    entries.push_back(parseEntry(tensors[i], i, payloadLength, path));
    if (!seen.insert(entries.back().name).second) {
      inconsistentIndex(path, "tensor name '", entries.back().name, "' appears twice");
    }
  }
  return entries;
}

}  // namespace tl::elastic::format
