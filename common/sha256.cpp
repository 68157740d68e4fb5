#include "common/sha256.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/check.h"

namespace tl {
namespace {

// A libcrypto call that failed: what OpenSSL says about it (they fail only without memory or
// with a broken OpenSSL configuration).
[[noreturn]] void cryptoFailure(const char* call) {
  char reason[256] = "no reason given";
  if (unsigned long code = ERR_get_error()) ERR_error_string_n(code, reason, sizeof(reason));
  throw Error(str(call, " failed: ", reason));
}

}  // namespace

void Sha256::CtxDeleter::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) cryptoFailure("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) cryptoFailure("EVP_DigestInit_ex");
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, size_t len) {
  TL_CHECK(!finished_, "Sha256::update after digest()");
  if (len > 0 && EVP_DigestUpdate(ctx_.get(), data, len) != 1) cryptoFailure("EVP_DigestUpdate");
}

Sha256Digest Sha256::digest() {
  TL_CHECK(!finished_, "Sha256::digest called twice");
  finished_ = true;
  Sha256Digest out{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), out.data(), &size) != 1) cryptoFailure("EVP_DigestFinal_ex");
  TL_CHECK(size == out.size(), "SHA-256 gave ", size, " bytes");
  return out;
}

std::string Sha256::hexDigest() {
  auto d = digest();
  return hex(d.data(), d.size());
}

std::string Sha256::hex(const void* data, size_t len) {
  static const char* kDigits = "0123456789abcdef";
  const auto* p = static_cast<const uint8_t*>(data);
  std::string s(len * 2, '0');
  for (size_t i = 0; i < len; ++i) {
    s[2 * i] = kDigits[p[i] >> 4];
    s[2 * i + 1] = kDigits[p[i] & 15];
  }
  return s;
}

Sha256Digest hmacSha256(std::string_view key, std::string_view message) {
  Sha256Digest out{};
  unsigned int size = 0;
  // HMAC() with a null key pointer would fail; an empty key is a valid (if weak) key.
  static const unsigned char kNoKey = 0;
  const void* keyBytes = key.empty() ? static_cast<const void*>(&kNoKey) : key.data();
  if (HMAC(EVP_sha256(), keyBytes, int(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(),
           &size) == nullptr) {
    cryptoFailure("HMAC");
  }
  TL_CHECK(size == out.size(), "HMAC-SHA-256 gave ", size, " bytes");
  return out;
}

bool constantTimeEqual(const void* a, size_t aLen, const void* b, size_t bLen) {
  if (aLen != bLen) return false;  // lengths of MACs are public
  return aLen == 0 || CRYPTO_memcmp(a, b, aLen) == 0;
}

}  // namespace tl
