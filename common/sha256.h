// SHA-256 (FIPS 180-4), incremental, and HMAC-SHA-256 (RFC 2104), both through OpenSSL's
// libcrypto. SHA-256 fingerprints results (params_sha256) and checkpoints; HMAC authenticates
// messages with a shared key.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace tl {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void update(const void* data, size_t len);
  // Finishes and returns the 32-byte digest; the object must not be updated afterwards.
  Sha256Digest digest();
  // Finishes and returns the digest as 64 lowercase hex characters.
  std::string hexDigest();

  static std::string hex(const void* data, size_t len);

 private:
  struct CtxDeleter {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, CtxDeleter> ctx_;
  bool finished_ = false;
};

// HMAC-SHA-256 of `message` under `key` (any length; RFC 2104 hashes keys over 64 bytes).
Sha256Digest hmacSha256(std::string_view key, std::string_view message);

// Whether a and b hold the same bytes, in a time that depends only on their lengths: for
// comparing a received MAC with the expected one without leaking where they differ.
bool constantTimeEqual(const void* a, size_t aLen, const void* b, size_t bLen);
inline bool constantTimeEqual(std::string_view a, std::string_view b) {
  return constantTimeEqual(a.data(), a.size(), b.data(), b.size());
}

}  // namespace tl
