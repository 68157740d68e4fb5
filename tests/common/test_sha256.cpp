#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/check.h"
#include "common/sha256.h"

namespace {

std::string sha(const std::string& s) {
  tl::Sha256 h;
  h.update(s.data(), s.size());
  return h.hexDigest();
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqkl"
                "mnopqrlm"
                "nopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

// Lengths around the 64-byte block and the 56-byte padding limit, where a hand-written
// implementation would go wrong first. Values from Python's hashlib; tl's own SHA-256 (before
// libcrypto) gave the same, as params_sha256 of recorded jobs shows.
TEST(Sha256, PaddingBoundaries) {
  const std::pair<size_t, const char*> cases[] = {
      {55, "576a1bf8d4478657e6dc4af9398544765c2a92cde28478b019235cfed315fc09"},
      {56, "9b20501dfd1d99161c257950f3444f3e49230c351c5c8e0943ef369f85f5205d"},
      {63, "30b345906b493f06f69444b6521113511c242f30e29840462950035043682f1e"},
      {64, "d8bc63b4fc1156e5e7d95a418b9bf54cd3174bedbc2db40f74895349b229b3c0"},
      {65, "1ee23b0fbcaecc1aff4a9e8f1645f35ab2c8e13609cd73b68df8b5e3f63ce073"},
      {119, "7a6589821178918ca8d9edaba5abfc1e9b2669564f4469b66885379c1530b2c8"},
      {120, "655250427d56b1b0eeb8497d21428704273458a01772d6881b65c0abac0f8a98"},
  };
  for (const auto& [length, expected] : cases) {
    std::string data;
    for (size_t i = 0; i < length; ++i) data.push_back(char((i * 7) & 255));
    EXPECT_EQ(sha(data), expected) << length << " bytes";
  }
}

TEST(Sha256, DigestEndsTheHash) {
  tl::Sha256 h;
  h.update("abc", 3);
  tl::Sha256 moved = std::move(h);
  EXPECT_EQ(moved.hexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(moved.update("x", 1), tl::Error);
  EXPECT_THROW(moved.digest(), tl::Error);
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(char(i * 7));
  for (size_t split : {0, 1, 63, 64, 65, 500, 999}) {
    tl::Sha256 h;
    h.update(data.data(), split);
    h.update(data.data() + split, data.size() - split);
    EXPECT_EQ(h.hexDigest(), sha(data)) << "split at " << split;
  }
}

std::string hmac(const std::string& key, const std::string& message) {
  const tl::Sha256Digest mac = tl::hmacSha256(key, message);
  return tl::Sha256::hex(mac.data(), mac.size());
}

// RFC 4231, test cases 1-7 (case 5 compares the 128-bit truncation, as the RFC gives only that).
TEST(HmacSha256, Rfc4231KnownAnswers) {
  EXPECT_EQ(hmac(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(char(i));
  EXPECT_EQ(hmac(key4, std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(hmac(std::string(20, '\x0c'), "Test With Truncation").substr(0, 32),
            "a3b6167473100ee06e0c796c2955552b");
  const std::string bigKey(131, '\xaa');
  EXPECT_EQ(hmac(bigKey, "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmac(bigKey,
                 "This is a test using a larger than block-size key and a larger than block-size "
                 "data. The key needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, EmptyKeyAndMessageAreValid) {
  // Python: hmac.new(b"", b"", hashlib.sha256).hexdigest()
  EXPECT_EQ(hmac("", ""), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  EXPECT_NE(hmac("k", "message"), hmac("K", "message"));
}

TEST(ConstantTimeEqual, ComparesBytesAndLengths) {
  EXPECT_TRUE(tl::constantTimeEqual("", ""));
  EXPECT_TRUE(tl::constantTimeEqual("mac-bytes", "mac-bytes"));
  EXPECT_FALSE(tl::constantTimeEqual("mac-bytes", "mac-bytez"));
  EXPECT_FALSE(tl::constantTimeEqual("Mac-bytes", "mac-bytes"));
  EXPECT_FALSE(tl::constantTimeEqual("mac", "mac-bytes")) << "a prefix is not equal";
  const std::string withZero("a\0b", 3), otherZero("a\0c", 3);
  EXPECT_FALSE(tl::constantTimeEqual(withZero, otherZero)) << "compares past a zero byte";
}

}  // namespace
