#include "control/control_key.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/check.h"
#include "common/files.h"
#include "common/sha256.h"
#include "control/tcp.h"

namespace tl::control {
namespace {

std::string errnoText() { return std::strerror(errno); }

std::string modeText(mode_t mode) {
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "%04o", unsigned(mode & 07777));
  return buffer;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Key parseKey(const std::string& text, const std::string& path) {
  std::string hex = text;
  if (!hex.empty() && hex.back() == '\n') hex.pop_back();
  TL_REQUIRE(hex.size() == 2 * kKeyBytes, "key file '", path, "' is not a control key (expected ",
             2 * kKeyBytes, " hex characters)");
  Key key(kKeyBytes);
  for (size_t i = 0; i < kKeyBytes; ++i) {
    const int hi = hexValue(hex[2 * i]), lo = hexValue(hex[2 * i + 1]);
    TL_REQUIRE(hi >= 0 && lo >= 0, "key file '", path, "' is not a control key (expected ",
               2 * kKeyBytes, " hex characters)");
    key[i] = uint8_t(hi * 16 + lo);
  }
  return key;
}

// Reads a small file through an open descriptor after checking what it is.
Key readCheckedKey(int fd, const std::string& path, bool mustBeOwned) {
  struct stat info;
  TL_REQUIRE(::fstat(fd, &info) == 0, "cannot stat key file '", path, "': ", errnoText());
  TL_REQUIRE(S_ISREG(info.st_mode), "key file '", path, "' is not a regular file");
  if (mustBeOwned) {
    TL_REQUIRE(info.st_uid == ::geteuid(), "key file '", path, "' belongs to uid ", info.st_uid,
               ", not to this user; refusing to use it");
  }
  TL_REQUIRE((info.st_mode & 077) == 0, "key file '", path,
             "' is readable or writable by group or others (mode ", modeText(info.st_mode),
             "); chmod 600 it, or remove it and let the job make a new one");
  std::string text(2 * kKeyBytes + 2, '\0');
  size_t have = 0;
  while (have < text.size()) {
    const ssize_t n = ::read(fd, text.data() + have, text.size() - have);
    if (n < 0 && errno == EINTR) continue;
    TL_REQUIRE(n >= 0, "cannot read key file '", path, "': ", errnoText());
    if (n == 0) break;
    have += size_t(n);
  }
  text.resize(have);
  return parseKey(text, path);
}

void writeKey(int fd, const Key& key, const std::string& path) {
  const std::string text = keyFileText(key);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    TL_REQUIRE(n > 0, "cannot write key file '", path, "': ", errnoText());
    done += size_t(n);
  }
  TL_REQUIRE(::fchmod(fd, 0600) == 0 && ::fsync(fd) == 0, "cannot write key file '", path,
             "': ", errnoText());
}

Key reuseKey(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0 && errno == ELOOP)
    inputError("key file '", path, "' is a symbolic link; refusing to use it");
  TL_REQUIRE(fd.get() >= 0, "cannot open key file '", path, "': ", errnoText());
  return readCheckedKey(fd.get(), path, /*mustBeOwned=*/true);
}

}  // namespace

std::string keyPath(const std::string& jobDir) { return joinPath(jobDir, "control.key"); }
std::string addressPath(const std::string& jobDir) { return joinPath(jobDir, "control.json"); }

std::string keyFileText(const Key& key) {
  static const char* digits = "0123456789abcdef";
  std::string text;
  for (uint8_t b : key) {
    text.push_back(digits[b >> 4]);
    text.push_back(digits[b & 15]);
  }
  return text + "\n";
}

Key createOrReuseKey(const std::string& jobDir) {
  const std::string path = keyPath(jobDir);
  Key key(kKeyBytes);
  TL_CHECK(RAND_bytes(key.data(), int(key.size())) == 1, "RAND_bytes failed");
  // A private temporary file, filled and synced, then linked to its name: link() does not
  // follow a symlink there and fails if the name exists, so the key is never half-written
  // and never lands where someone else pointed it.
  Nonce suffix = randomNonce();
  const std::string tmp = joinPath(jobDir, ".control.key." + Sha256::hex(suffix.data(), 6));
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    TL_REQUIRE(fd.get() >= 0, "cannot create key file '", path, "' in job folder '", jobDir,
               "': ", errnoText());
    try {
      writeKey(fd.get(), key, path);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  const int linked = ::link(tmp.c_str(), path.c_str());
  const int linkErrno = errno;
  ::unlink(tmp.c_str());
  if (linked == 0) return key;
  if (linkErrno == EEXIST) return reuseKey(path);
  // A file system without hard links: create the name itself, exclusively.
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0 && errno == EEXIST) return reuseKey(path);
  TL_REQUIRE(fd.get() >= 0, "cannot create key file '", path, "': ", errnoText());
  writeKey(fd.get(), key, path);
  return key;
}

Key readKeyFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  TL_REQUIRE(fd.get() >= 0, "cannot open key file '", path, "': ", errnoText());
  return readCheckedKey(fd.get(), path, /*mustBeOwned=*/false);
}

}  // namespace tl::control
