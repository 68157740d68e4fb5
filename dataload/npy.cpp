#include "dataload/npy.h"

#include <cstring>
#include <map>
#include <optional>

#include "common/check.h"

namespace tl::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int64_t kMagicBytes = 6;
constexpr int64_t kMaxHeaderBytes = int64_t(1) << 20;
constexpr int kMaxDims = 32;  // NumPy's own limit (NPY_MAXDIMS) in the versions that write v1-v3

// The value of one key of the header dict: a string, a boolean or a tuple of integers.
struct Value {
  enum class Kind { String, Bool, Tuple } kind = Kind::String;
  std::string text;
  bool flag = false;
  std::vector<int64_t> tuple;
};

// A strict reader of the dict literal NumPy writes: quoted keys, values that are strings,
// True/False or tuples of non-negative integers, optional trailing commas, spaces anywhere.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  std::map<std::string, Value> dict() {
    std::map<std::string, Value> entries;
    skipSpaces();
    expect('{');
    while (true) {
      skipSpaces();
      if (peek() == '}') break;
      const std::string key = quoted("a key");
      skipSpaces();
      expect(':');
      skipSpaces();
      Value value = parseValue(key);
      if (!entries.emplace(key, std::move(value)).second) bad("key '", key, "' appears twice");
      skipSpaces();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      if (peek() != '}') bad("expected ',' or '}' at byte ", at_, " of the header dict");
    }
    ++at_;
    skipSpaces();
    if (at_ != text_.size()) bad("unexpected text after the header dict at byte ", at_);
    return entries;
  }

  template <typename... Args>
  [[noreturn]] void bad(const Args&... args) const {
    inputError("NumPy file '", path_, "' has a bad header: ", args...);
  }

 private:
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skipSpaces() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t')) ++at_;
  }
  void expect(char c) {
    if (peek() != c) bad("expected '", c, "' at byte ", at_, " of the header dict");
    ++at_;
  }
  std::string quoted(const char* what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad("expected ", what, " in quotes at byte ", at_);
    const size_t end = text_.find(quote, at_ + 1);
    if (end == std::string::npos) bad("unterminated string at byte ", at_);
    std::string s = text_.substr(at_ + 1, end - at_ - 1);
    at_ = end + 1;
    return s;
  }
  Value parseValue(const std::string& key) {
    Value v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = Value::Kind::String;
      v.text = quoted("a string");
    } else if (text_.compare(at_, 4, "True") == 0 || text_.compare(at_, 5, "False") == 0) {
      v.kind = Value::Kind::Bool;
      v.flag = text_[at_] == 'T';
      at_ += v.flag ? 4 : 5;
    } else if (c == '(') {
      v.kind = Value::Kind::Tuple;
      ++at_;
      while (true) {
        skipSpaces();
        if (peek() == ')') break;
        v.tuple.push_back(integer());
        if (v.tuple.size() > size_t(kMaxDims)) bad("more than ", kMaxDims, " dimensions");
        skipSpaces();
        if (peek() == ',') {
          ++at_;
        } else if (peek() != ')') {
          bad("expected ',' or ')' in the shape at byte ", at_);
        }
      }
      ++at_;
    } else if (c == '[' && key == "descr") {
      bad("a structured dtype (record fields) is not supported");
    } else {
      bad("the value of '", key, "' at byte ", at_, " is not a string, True/False or a tuple");
    }
    return v;
  }
  int64_t integer() {
    const size_t start = at_;
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      if (value > (int64_t(1) << 50)) bad("a dimension larger than 2^50 in the shape");
      value = value * 10 + (text_[at_] - '0');
      ++at_;
    }
    if (at_ == start) bad("expected a non-negative integer in the shape at byte ", at_);
    if (peek() == 'L') ++at_;  // Python 2 longs
    return value;
  }

  const std::string& path_;
  const std::string& text_;
  size_t at_ = 0;
};

uint32_t littleEndian(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

std::optional<ArrayDtype> dtypeOfDescr(const std::string& d) {
  static const std::map<std::string, ArrayDtype> known = {
      {"|u1", ArrayDtype::UInt8},  {"<u1", ArrayDtype::UInt8},  {"<u2", ArrayDtype::UInt16},
      {"<i4", ArrayDtype::Int32},  {"<u4", ArrayDtype::UInt32}, {"<i8", ArrayDtype::Int64},
      {"<f4", ArrayDtype::Float32}};
  const auto it = known.find(d);
  if (it == known.end()) return std::nullopt;
  return it->second;
}

}  // namespace

int64_t ArrayFile::rowElements() const {
  int64_t n = 1;
  for (size_t d = 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

NpyHeader parseNpyHeader(const std::string& path, const uint8_t* bytes, int64_t size) {
  TL_REQUIRE(size > 0, "NumPy file '", path, "' is empty (0 bytes)");
  TL_REQUIRE(size >= kMagicBytes + 2 && std::memcmp(bytes, kMagic, kMagicBytes) == 0,
             "NumPy file '", path, "' is not a .npy file (it does not start with \\x93NUMPY)");
  const int major = bytes[6], minor = bytes[7];
  TL_REQUIRE((major >= 1 && major <= 3) && minor == 0, "NumPy file '", path,
             "' has format version ", major, ".", minor, " (tl reads 1.0, 2.0 and 3.0)");
  const int lengthBytes = major == 1 ? 2 : 4;
  const int64_t headerStart = 8 + lengthBytes;
  TL_REQUIRE(size >= headerStart, "NumPy file '", path, "' is truncated: ", size,
             " bytes, inside its header length");
  const int64_t headerBytes = littleEndian(bytes + 8, lengthBytes);
  TL_REQUIRE(headerBytes <= kMaxHeaderBytes, "NumPy file '", path, "' has a bad header: ",
             headerBytes, " bytes long (at most ", kMaxHeaderBytes, ")");
  TL_REQUIRE(size >= headerStart + headerBytes, "NumPy file '", path, "' is truncated: ", size,
             " bytes, shorter than its ", headerStart + headerBytes, "-byte header");
  std::string text(reinterpret_cast<const char*>(bytes + headerStart), size_t(headerBytes));
  HeaderParser parser(path, text);
  if (text.empty() || text.back() != '\n') parser.bad("it does not end with a newline");
  text.pop_back();
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) parser.bad("a byte that is not printable ASCII (", int(uint8_t(c)), ")");
  }
  const std::map<std::string, Value> dict = parser.dict();
  for (const auto& [key, value] : dict) {
    if (key != "descr" && key != "fortran_order" && key != "shape") parser.bad("unknown key '", key, "'");
  }
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    if (!dict.count(key)) parser.bad("no '", key, "' key");
  }
  const Value& descr = dict.at("descr");
  const Value& order = dict.at("fortran_order");
  const Value& shape = dict.at("shape");
  if (descr.kind != Value::Kind::String) parser.bad("'descr' is not a string");
  if (order.kind != Value::Kind::Bool) parser.bad("'fortran_order' is not True or False");
  if (shape.kind != Value::Kind::Tuple) parser.bad("'shape' is not a tuple");

  NpyHeader h;
  const std::optional<ArrayDtype> dtype = dtypeOfDescr(descr.text);
  if (!dtype) {
    const std::string& d = descr.text;
    TL_REQUIRE(d.find('O') == std::string::npos, "NumPy file '", path,
               "' holds an object dtype (pickled Python objects), which tl cannot read: save a "
               "numeric array");
    TL_REQUIRE(d.empty() || d[0] != '>', "NumPy file '", path, "' is big-endian ('", d,
               "'): save it little-endian (array.astype('<", d.substr(1), "'))");
    inputError("NumPy file '", path, "' has dtype '", d,
               "', which tl does not read (uint8, uint16, int32, uint32, int64, float32)");
  }
  h.dtype = *dtype;
  TL_REQUIRE(!order.flag, "NumPy file '", path,
             "' is in Fortran order: save it in C order (numpy.ascontiguousarray)");
  h.shape = shape.tuple;
  h.dataOffset = headerStart + headerBytes;
  // The element count saturates so that absurd shapes cannot overflow; they announce more
  // than any file holds.
  constexpr int64_t kMaxBytes = int64_t(1) << 56;
  int64_t dataBytes = dtypeBytes(h.dtype);
  for (int64_t dim : h.shape) {
    dataBytes = dim == 0 ? 0 : (dataBytes > kMaxBytes / dim ? kMaxBytes + 1 : dataBytes * dim);
  }
  const int64_t announced = h.dataOffset + dataBytes;
  TL_REQUIRE(size >= announced, "NumPy file '", path, "' is truncated: ", size,
             " bytes, but its header announces ", dtypeName(h.dtype), " ", shapeText(h.shape),
             " (", dataBytes > kMaxBytes ? "more than 2^56" : std::to_string(announced), " bytes)");
  TL_REQUIRE(size == announced, "NumPy file '", path, "' is corrupt: ", size - announced,
             " bytes follow the ", dtypeName(h.dtype), " ", shapeText(h.shape),
             " data its header announces");
  return h;
}

ArrayFile openNpy(const std::string& path) {
  ArrayFile a;
  a.path = path;
  a.file = std::make_shared<const MappedFile>(path);
  const NpyHeader h = parseNpyHeader(path, a.file->data(), a.file->size());
  TL_REQUIRE(!h.shape.empty(), "NumPy file '", path,
             "' holds a single value (shape ()): tl needs the samples on the first axis");
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.dataOffset = h.dataOffset;
  return a;
}

ArrayFile openRawArray(const std::string& path, ArrayDtype dtype) {
  ArrayFile a;
  a.path = path;
  a.dtype = dtype;
  a.file = std::make_shared<const MappedFile>(path);
  const int64_t size = a.file->size();
  TL_REQUIRE(size > 0, "raw array file '", path, "' is empty (0 bytes)");
  TL_REQUIRE(size % dtypeBytes(dtype) == 0, "raw array file '", path, "' holds ", size,
             " bytes, not a whole number of ", dtypeName(dtype), " values (", dtypeBytes(dtype),
             " bytes each)");
  a.shape = {size / dtypeBytes(dtype)};
  return a;
}

std::string encodeNpy(ArrayDtype dtype, const std::vector<int64_t>& shape, const void* data) {
  static const std::map<ArrayDtype, std::string> descr = {
      {ArrayDtype::UInt8, "|u1"},  {ArrayDtype::UInt16, "<u2"}, {ArrayDtype::Int32, "<i4"},
      {ArrayDtype::UInt32, "<u4"}, {ArrayDtype::Int64, "<i8"},  {ArrayDtype::Float32, "<f4"}};
  std::string dict = "{'descr': '" + descr.at(dtype) + "', 'fortran_order': False, 'shape': " +
                     shapeText(shape) + ", }";
  // Magic, version, length, dict, spaces and '\n': a multiple of 64 bytes, as NumPy writes.
  const size_t unpadded = size_t(kMagicBytes + 2 + 2) + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  TL_CHECK(dict.size() <= 0xffff, "a header of ", dict.size(), " bytes");
  int64_t bytes = dtypeBytes(dtype);
  for (int64_t dim : shape) bytes *= dim;
  std::string out(kMagic, size_t(kMagicBytes));
  out += char(1);
  out += char(0);
  out += char(dict.size() & 0xff);
  out += char(dict.size() >> 8);
  out += dict;
  out.append(static_cast<const char*>(data), size_t(bytes));
  return out;
}

}  // namespace tl::data
