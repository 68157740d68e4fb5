// control.key: created private and never through a symlink, reused only when it is still
// private and ours, and read by clients only when it is private.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "common/check.h"
#include "common/files.h"
#include "control/control_key.h"
#include "tests/support/run_command.h"

namespace tl::control {
namespace {

mode_t modeOf(const std::string& path) {
  struct stat info;
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ControlKey, CreatedPrivateThenReused) {
  const std::string dir = ::tl::testing::freshDir("control_key_create");
  const Key key = createOrReuseKey(dir);
  EXPECT_EQ(key.size(), kKeyBytes);
  EXPECT_EQ(modeOf(keyPath(dir)), 0600u);
  EXPECT_EQ(readFile(keyPath(dir)), keyFileText(key));
  EXPECT_EQ(createOrReuseKey(dir), key);
  EXPECT_EQ(readKeyFile(keyPath(dir)), key);
  // No temporary file is left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1);
  const std::string other = ::tl::testing::freshDir("control_key_other");
  EXPECT_NE(createOrReuseKey(other), key);
}

TEST(ControlKey, RefusesASymlink) {
  const std::string dir = ::tl::testing::freshDir("control_key_symlink");
  const std::string elsewhere = dir + "/elsewhere";
  std::ofstream(elsewhere) << "do not touch\n";
  ASSERT_EQ(::symlink(elsewhere.c_str(), keyPath(dir).c_str()), 0);
  EXPECT_NE(errorOf([&] { createOrReuseKey(dir); }).find("is a symbolic link"), std::string::npos);
  EXPECT_EQ(readFile(elsewhere), "do not touch\n");
  // A dangling one too: nothing is created where it points.
  ::unlink(keyPath(dir).c_str());
  ASSERT_EQ(::symlink((dir + "/missing").c_str(), keyPath(dir).c_str()), 0);
  EXPECT_NE(errorOf([&] { createOrReuseKey(dir); }).find("symbolic link"), std::string::npos);
  EXPECT_FALSE(fileExists(dir + "/missing"));
}

TEST(ControlKey, RefusesAKeyOthersCanRead) {
  const std::string dir = ::tl::testing::freshDir("control_key_mode");
  createOrReuseKey(dir);
  ASSERT_EQ(::chmod(keyPath(dir).c_str(), 0644), 0);
  const std::string error = errorOf([&] { createOrReuseKey(dir); });
  EXPECT_NE(error.find("readable or writable by group or others (mode 0644)"), std::string::npos)
      << error;
  EXPECT_NE(errorOf([&] { readKeyFile(keyPath(dir)); }).find("mode 0644"), std::string::npos);
  ASSERT_EQ(::chmod(keyPath(dir).c_str(), 0620), 0);
  EXPECT_NE(errorOf([&] { createOrReuseKey(dir); }).find("mode 0620"), std::string::npos);
}

TEST(ControlKey, RefusesAMalformedOrForeignKey) {
  const std::string dir = ::tl::testing::freshDir("control_key_bad");
  {
    std::ofstream out(keyPath(dir));
    out << "not a key\n";
  }
  ::chmod(keyPath(dir).c_str(), 0600);
  EXPECT_NE(errorOf([&] { createOrReuseKey(dir); }).find("is not a control key"),
            std::string::npos);
  ::unlink(keyPath(dir).c_str());
  ASSERT_EQ(::mkdir(keyPath(dir).c_str(), 0700), 0);
  EXPECT_NE(errorOf([&] { createOrReuseKey(dir); }).find("not a regular file"), std::string::npos);
  ::rmdir(keyPath(dir).c_str());
  EXPECT_NE(errorOf([&] { readKeyFile(dir + "/none"); }).find("cannot open key file"),
            std::string::npos);
  if (::geteuid() != 0) GTEST_SKIP() << "the foreign-owner case needs root to chown";
  createOrReuseKey(dir);
  ASSERT_EQ(::chown(keyPath(dir).c_str(), 65534, 65534), 0);
  EXPECT_NE(errorOf([&] { createOrReuseKey(dir); }).find("belongs to uid 65534"),
            std::string::npos);
}

}  // namespace
}  // namespace tl::control
