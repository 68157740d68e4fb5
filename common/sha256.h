// SHA-256 (FIPS 180-4), incremental. Used for params_sha256 and checkpoint checksums.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tl {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t len);
  // Finishes and returns the 32-byte digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  // Finishes and returns the digest as 64 lowercase hex characters.
  std::string hexDigest();

  static std::string hex(const void* data, size_t len);

 private:
  void compress(const uint8_t* block);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t bufferLen_ = 0;
  uint64_t totalLen_ = 0;
  bool finished_ = false;
};

}  // namespace tl
