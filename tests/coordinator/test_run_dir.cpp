// The coordinator's run directory holds the socket jobs trust and the files the coordinator
// writes (pid, log): a folder another local user could write to, or point elsewhere with a
// symbolic link, is refused, and a symbolic link planted for one of its files is not followed
// (the file it points to stays untouched), by the coordinator and by the job side alike.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <vector>

#include "common/check.h"
#include "common/files.h"
#include "coordinator/coordinator_client.h"
#include "coordinator/coordinator_server.h"
#include "coordinator/ensure_coordinator.h"
#include "tests/support/run_command.h"
#include "tests/coordinator/coordinator_test_util.h"

namespace tl::coordinator {
namespace {

using test_util::CoordinatorCleanup;

const std::string kBinary = TL_COORDINATOR_BIN;

CoordinatorOptions optionsFor(const std::string& runDir) {
  CoordinatorOptions options;
  options.runDir = runDir;
  options.balancer.loaderCores = 1;
  options.idleExitSeconds = 0;
  return options;
}

// The InputError's message, "" when `action` did not throw one.
std::string inputErrorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string serverError(const std::string& runDir) {
  return inputErrorOf([&] { CoordinatorServer server(optionsFor(runDir)); });
}

mode_t modeOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST(CoordinatorRunDir, IsCreatedPrivate) {
  const std::string dir = test_util::freshRunDir("rundir_new") + "/a/b";
  const mode_t umaskBefore = ::umask(0);
  prepareRunDir(dir);
  ::umask(umaskBefore);
  EXPECT_EQ(modeOf(dir), 0700u);
}

TEST(CoordinatorRunDir, AFolderOthersCanWriteIsRefused) {
  for (mode_t mode : {0777, 0770, 0722}) {
    const std::string dir = test_util::freshRunDir("rundir_mode");
    CoordinatorCleanup cleanup{dir};
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    std::string error = serverError(dir);
    EXPECT_NE(error.find("'" + dir + "'"), std::string::npos) << error;
    EXPECT_NE(error.find("writable by group or others"), std::string::npos) << error;
    // The job side refuses it too, before starting or trusting a coordinator there.
    error = inputErrorOf([&] { ensureCoordinator(dir, kBinary); });
    EXPECT_NE(error.find("writable by group or others"), std::string::npos) << error;
    EXPECT_FALSE(fileExists(socketPath(dir)));
  }
  const std::string usual = test_util::freshRunDir("rundir_0755");  // mkdir -p, umask 022
  ASSERT_EQ(::chmod(usual.c_str(), 0755), 0);
  EXPECT_EQ(serverError(usual), "");
}

TEST(CoordinatorRunDir, AJobDoesNotTrustASocketInAFolderOthersCanWrite) {
  const std::string dir = test_util::freshRunDir("rundir_trust");
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  CoordinatorServer server(optionsFor(dir));  // listening; run() is not needed to connect
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  CoordinatorClient client(CoordinatorClientOptions{dir, "j/0", 0, 3, 1, 8, "", 0});
  EXPECT_FALSE(client.connect());
  EXPECT_EQ(client.currentWorkers(), 3);
}

TEST(CoordinatorRunDir, AFolderOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to another user";
  const std::string dir = test_util::freshRunDir("rundir_foreign");
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.c_str(), 4242, 4242), 0);
  std::string error = serverError(dir);
  EXPECT_NE(error.find("'" + dir + "'"), std::string::npos) << error;
  EXPECT_NE(error.find("belongs to uid 4242"), std::string::npos) << error;
  EXPECT_FALSE(fileExists(instanceLockPath(dir)));
}

TEST(CoordinatorRunDir, ASymlinkedFolderIsRefused) {
  const std::string target = test_util::freshRunDir("rundir_target");
  const std::string link = test_util::freshRunDir("rundir_link");
  CoordinatorCleanup cleanup{target};
  ASSERT_EQ(::chmod(target.c_str(), 0700), 0);
  std::filesystem::remove(link);
  std::filesystem::create_directory_symlink(target, link);
  std::string error = serverError(link);
  EXPECT_NE(error.find("'" + link + "'"), std::string::npos) << error;
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  error = inputErrorOf([&] { ensureCoordinator(link + "/", kBinary); });
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  EXPECT_TRUE(std::filesystem::is_empty(target));
}

// With fs.protected_symlinks=0, a symbolic link another user planted earlier would make the
// coordinator truncate (pid) or append to (log) whatever file it points to.
TEST(CoordinatorRunDir, PlantedSymlinksForItsFilesAreNotFollowed) {
  const std::string victim = test_util::freshRunDir("rundir_victim") + "/precious";
  for (const std::string& file : {instanceLockPath(""), logPath(""), spawnLockPath("")}) {
    writeFileAtomic(victim, "precious\n");
    const std::string name = std::filesystem::path(file).filename().string();
    const std::string dir = test_util::freshRunDir("rundir_planted");
    CoordinatorCleanup cleanup{dir};
    ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
    std::filesystem::create_symlink(victim, dir + "/" + name);
    std::vector<std::string> errors;
    if (name != "coordinator.lock") errors.push_back(serverError(dir));
    // The job side opens the spawn lock, and the log for the coordinator it starts.
    if (name != "coordinator.pid") {
      errors.push_back(inputErrorOf([&] { ensureCoordinator(dir, kBinary); }));
    }
    for (const std::string& error : errors) {
      EXPECT_NE(error.find("'" + dir + "/" + name + "' is a symbolic link"), std::string::npos)
          << error;
    }
    EXPECT_EQ(readFile(victim), "precious\n") << name;
  }
}

TEST(CoordinatorRunDir, TlCoordinatorSaysWhatIsWrongInOneLine) {
  const std::string dir = test_util::freshRunDir("rundir_cli");
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  auto r = ::tl::testing::runCommand(kBinary + " --run-dir " + dir, 20, dir);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_EQ(::tl::testing::countOccurrences(r.err, "\n"), 1) << r.err;
  EXPECT_NE(r.err.find("'" + dir + "' is writable by group or others (mode 0777)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace tl::coordinator
