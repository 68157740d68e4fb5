#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "common/check.h"
#include "common/files.h"

namespace {

std::string tmpDir(const std::string& name) {
  const char* base = std::getenv("TL_TEST_TMP");
  auto dir = std::filesystem::path(base ? base : "/tmp") / ("test_files_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(Files, AtomicWriteReplacesWholeFileAndLeavesNoTemporaries) {
  auto dir = tmpDir("atomic");
  auto path = tl::joinPath(dir, "f.bin");
  tl::writeFileAtomic(path, "first version");
  tl::writeFileAtomic(path, "second");
  EXPECT_EQ(tl::readFile(path), "second");
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(Files, MissingFileNamesThePath) {
  try {
    tl::readFile("/nonexistent/tl/file.bin");
    FAIL() << "no exception";
  } catch (const tl::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tl/file.bin"), std::string::npos);
  }
}

TEST(Files, UnwritableDirectoryIsAnInputError) {
  auto dir = tmpDir("unwritable");
  auto file = tl::joinPath(dir, "plain-file");
  tl::writeFileAtomic(file, "x");
  // A directory below a regular file cannot be created, even by root.
  EXPECT_THROW(tl::ensureWritableDir(tl::joinPath(file, "out")), tl::InputError);
  EXPECT_NO_THROW(tl::ensureWritableDir(tl::joinPath(dir, "fresh/sub")));
}

TEST(Check, ComparisonMessageCarriesBothOperandsAndLocation) {
  try {
    int a = 3, b = 4;
    TL_CHECK_EQ(a, b, "context ", 7);
    FAIL() << "no exception";
  } catch (const tl::Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("test_files.cpp"), std::string::npos) << what;
    EXPECT_NE(what.find("(3 vs 4)"), std::string::npos) << what;
    EXPECT_NE(what.find("context 7"), std::string::npos) << what;
  }
}

}  // namespace
