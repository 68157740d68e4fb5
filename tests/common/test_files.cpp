#include <gtest/gtest.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

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

std::vector<std::string> entriesOf(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A writer SIGKILLed mid-write whose parent has not reaped it yet (a zombie: kill(pid, 0) still
// succeeds, as for ranks orphaned under a container's init that never reaps) is gone all the
// same: the next write of the file removes its temporary.
TEST(Files, TemporaryOfAKilledWriterIsRemovedWhileTheWriterIsAZombie) {
  auto dir = tmpDir("zombie_writer");
  auto path = tl::joinPath(dir, "checkpoint.tl");
  tl::writeFileAtomic(path, "old");
  const int watch = ::inotify_init1(IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, dir.c_str(), IN_CREATE), 0);
  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    // 64 MiB, written and fsync'ed: far longer than the parent takes to see the temporary.
    tl::writeFileAtomic(path, std::string(size_t(64) << 20, 'x'));
    ::_exit(0);
  }
  alignas(inotify_event) char events[4096];
  ASSERT_GT(::read(watch, events, sizeof events), 0);  // the writer's temporary was created
  ASSERT_EQ(::kill(writer, SIGKILL), 0);
  ::close(watch);
  siginfo_t info{};  // wait until it is dead, but leave it unreaped
  ASSERT_EQ(::waitid(P_PID, id_t(writer), &info, WEXITED | WNOWAIT), 0);
  ASSERT_EQ(info.si_code, CLD_KILLED);
  ASSERT_EQ(::kill(writer, 0), 0) << "a zombie still answers kill(pid, 0)";
  const std::string temporary = ".checkpoint.tl.tmp." + std::to_string(writer) + "@";
  const std::vector<std::string> before = entriesOf(dir);
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before[0].rfind(temporary, 0), 0u) << before[0];

  tl::writeFileAtomic(path, "new");
  EXPECT_EQ(entriesOf(dir), std::vector<std::string>{"checkpoint.tl"});
  EXPECT_EQ(tl::readFile(path), "new");
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);
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
