#include "tests/elastic/checkpoint_test_util.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/check.h"
#include "common/sha256.h"
#include "elastic/checkpoint/checkpoint_format.h"

namespace tl::elastic::testing {

std::string rawBytes(const at::Tensor& tensor) {
  // Lazy conjugation and negation are part of the value, as in the writer.
  at::Tensor values = tensor.resolve_conj().resolve_neg().contiguous();
  size_t length = size_t(values.numel()) * values.element_size();
  if (length == 0) return {};
  return std::string(static_cast<const char*>(values.data_ptr()), length);
}

at::Tensor floatFromBits(const std::vector<uint32_t>& bits) {
  at::Tensor t = at::empty({int64_t(bits.size())}, at::kFloat);
  std::memcpy(t.data_ptr(), bits.data(), bits.size() * sizeof(uint32_t));
  return t;
}

at::Tensor doubleFromBits(const std::vector<uint64_t>& bits) {
  at::Tensor t = at::empty({int64_t(bits.size())}, at::kDouble);
  std::memcpy(t.data_ptr(), bits.data(), bits.size() * sizeof(uint64_t));
  return t;
}

CheckpointData sampleCheckpoint() {
  at::manual_seed(7);
  CheckpointData data;
  data.manifest = {
      {"job", {{"model", "resnet18"}, {"workers", 4}, {"lr", 0.1}, {"placement", {2, 1, 1}}}},
      {"step", 12345},
      {"big", std::numeric_limits<int64_t>::max()},
      {"note", "ünïcødé \"quoted\"\n"},
      {"nothing", nullptr},
      {"flags", {true, false}}};
  auto& t = data.tensors;
  t.emplace_back("model/conv1.weight", at::randn({4, 3, 3, 3}));
  t.emplace_back("model/fc.bias", at::randn({10}, at::kDouble));
  t.emplace_back("half", at::randn({7}).to(at::kHalf));
  t.emplace_back("bfloat", at::randn({2, 5}).to(at::kBFloat16));
  t.emplace_back("complex64", at::randn({2, 2}, at::kComplexFloat));
  t.emplace_back("complex128", at::randn({3}, at::kComplexDouble));
  t.emplace_back("int8", at::arange(-128, 128, at::kChar));
  t.emplace_back("int16", at::tensor({int16_t(-32768), int16_t(0), int16_t(32767)}));
  t.emplace_back("int32", at::tensor({std::numeric_limits<int32_t>::min(), 0, 42}));
  t.emplace_back("int64", at::tensor({std::numeric_limits<int64_t>::min(), int64_t(-1),
                                      std::numeric_limits<int64_t>::max()}));
  t.emplace_back("uint8", at::arange(0, 256, at::kByte).reshape({16, 16}));
  t.emplace_back("bool", at::tensor({1, 0, 0, 1, 1}, at::kByte).to(at::kBool));
  t.emplace_back("scalar float", at::scalar_tensor(3.25));
  t.emplace_back("scalar int", at::scalar_tensor(int64_t(-9), at::kLong));
  t.emplace_back("empty", at::empty({0}));
  t.emplace_back("empty 3d", at::empty({3, 0, 2}, at::kLong));
  t.emplace_back("optim/momentum/conv1.weight", at::randn({4, 3, 3, 3}));
  t.emplace_back("weird name: ä/\"\\ \t", at::ones({1}));
  return data;
}

void expectIdentical(const CheckpointData& expected, const CheckpointData& actual) {
  EXPECT_EQ(expected.manifest, actual.manifest);
  ASSERT_EQ(expected.tensors.size(), actual.tensors.size());
  for (size_t i = 0; i < expected.tensors.size(); ++i) {
    const auto& [name, want] = expected.tensors[i];
    const auto& [gotName, got] = actual.tensors[i];
    EXPECT_EQ(name, gotName);
    EXPECT_EQ(want.scalar_type(), got.scalar_type()) << name;
    EXPECT_EQ(want.sizes(), got.sizes()) << name;
    EXPECT_TRUE(got.is_contiguous()) << name;
    EXPECT_TRUE(rawBytes(want) == rawBytes(got)) << name << ": bytes differ";
  }
}

std::string inputErrorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected tl::InputError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected tl::InputError, nothing was thrown";
  return {};
}

void expectContains(const std::string& message, const std::vector<std::string>& parts) {
  for (const auto& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeBytes(const std::string& path, const std::string& bytes) {
  // A fresh file rather than O_TRUNC: ext4 flushes a truncated file's data on close, which made
  // the byte-by-byte corruption loops take seconds instead of milliseconds.
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  TL_CHECK(out.good(), "cannot write ", path);
}

CheckpointImage splitImage(const std::string& bytes) {
  TL_CHECK_GE(bytes.size(), format::kFixedHeaderBytes + format::kChecksumBytes);
  auto header = format::decodeFixedHeader(bytes.data());
  TL_CHECK_EQ(header.fileLength, bytes.size());
  CheckpointImage image;
  image.version = header.version;
  image.index = nlohmann::json::parse(bytes.substr(format::kFixedHeaderBytes, header.indexLength));
  uint64_t payloadStart = format::payloadOffset(header.indexLength);
  image.payload = bytes.substr(payloadStart, bytes.size() - format::kChecksumBytes - payloadStart);
  return image;
}

std::string sealImage(const CheckpointImage& image) {
  return sealImage(image.version, image.index.dump(), image.payload);
}

std::string sealImage(uint32_t version, const std::string& indexText, const std::string& payload) {
  format::FixedHeader header;
  header.version = version;
  header.indexLength = uint32_t(indexText.size());
  uint64_t payloadStart = format::payloadOffset(header.indexLength);
  header.fileLength = payloadStart + payload.size() + format::kChecksumBytes;
  std::string bytes(format::kFixedHeaderBytes, '\0');
  format::encodeFixedHeader(header, bytes.data());
  bytes += indexText;
  bytes.resize(payloadStart, '\0');
  bytes += payload;
  Sha256 sha;
  sha.update(bytes.data(), bytes.size());
  auto digest = sha.digest();
  bytes.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  return bytes;
}

}  // namespace tl::elastic::testing
