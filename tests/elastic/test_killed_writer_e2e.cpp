// A checkpoint writer SIGKILLed mid-write under mpirun, as a container whose init never reaps
// leaves it: a zombie that still answers kill(pid, 0). The job resumed in the same folder must
// remove the writer's `.checkpoint.tl.tmp.<pid>@<host>.*` (docs/guide/running-a-job.md: "the next job in that folder
// removes those of writers that are gone"), and the start-up sweep must reach the checkpoint
// folder inside the locked output folder.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/files.h"
#include "tests/support/run_command.h"

extern char** environ;

namespace {

using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

constexpr const char* kTemporaryPrefix = ".checkpoint.tl.tmp.";

pid_t spawnShell(const std::string& command) {
  const std::string exec = "exec " + command;  // the shell becomes the command
  const char* argv[] = {"/bin/sh", "-c", exec.c_str(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0)
    return -1;
  return pid;
}

// The first temporary of checkpoint.tl created in `dir` after a complete checkpoint.tl exists
// whose writer is stopped while the temporary still exists: the writer's pid (stopped, mid-write), or -1 after `seconds`.
pid_t stopAWriterMidWrite(const std::string& dir, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!std::filesystem::exists(dir) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (watch < 0 || ::inotify_add_watch(watch, dir.c_str(), IN_CREATE) < 0) return -1;
  alignas(inotify_event) char buffer[8192];
  while (std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::read(watch, buffer, sizeof buffer);
    if (n <= 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += ssize_t(sizeof(inotify_event) + event->len);
      const std::string name = event->len ? event->name : "";
      if (name.rfind(kTemporaryPrefix, 0) != 0) continue;
      // Only a write that replaces a complete checkpoint: the resume needs one to start from.
      if (!std::filesystem::exists(tl::joinPath(dir, "checkpoint.tl"))) continue;
      const pid_t writer = pid_t(std::stol(name.substr(std::string(kTemporaryPrefix).size())));
      if (::kill(writer, SIGSTOP) != 0) continue;
      if (std::filesystem::exists(tl::joinPath(dir, name))) {
        ::close(watch);
        return writer;
      }
      ::kill(writer, SIGCONT);  // it had renamed the file already: try the next checkpoint
    }
  }
  ::close(watch);
  return -1;
}

// The processes whose parent is this test (orphaned ranks, once mpirun is gone).
std::vector<pid_t> orphansOfThisTest() {
  std::vector<pid_t> children;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = slurp(e.path().string() + "/stat");
    const size_t close = stat.rfind(')');
    char state = 0;
    int parent = 0;
    if (close != std::string::npos &&
        std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &parent) == 2 &&
        parent == ::getpid())
      children.push_back(pid_t(std::stoi(name)));
  }
  return children;
}

std::vector<std::string> temporariesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) names.push_back(name);
  }
  return names;
}

TEST(KilledWriterE2E, ResumedJobRemovesTheTemporaryOfAWriterLeftAZombie) {
  // Orphans of this test's children become its children, and it leaves them unreaped.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  std::string error;
  const std::string data = tl::testing::makeSyntheticCifar("killed_writer_data", 256, 32, 5, &error);
  ASSERT_EQ(error, "");
  const std::string out = freshDir("killed_writer"), ckpt = out + "/checkpoint";
  const std::string job = std::string(TL_LAUNCH_BIN) + " --dataset cifar10 --data-dir " + data +
                          " --model cnn --batch 8 --seed 4 --log-every 0 --steps 60 --output-dir " +
                          out;
  const pid_t mpirun = spawnShell(tl::testing::mpirunPrefix(2) + job + " --checkpoint-every 1 >" +
                                  out + "/first.out 2>" + out + "/first.err");
  ASSERT_GT(mpirun, 0);
  const pid_t writer = stopAWriterMidWrite(ckpt, 120);
  // mpirun goes first, so that nothing reaps the ranks but this test.
  ::kill(mpirun, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(mpirun, &status, 0), mpirun);
  ASSERT_GT(writer, 0) << "no checkpoint write was caught in progress\n" << slurp(out + "/first.err");
  ASSERT_EQ(::kill(writer, SIGKILL), 0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, id_t(writer), &info, WEXITED | WNOWAIT), 0) << "not our orphan";
  ASSERT_EQ(::kill(writer, 0), 0) << "the killed writer is a zombie that answers kill(pid, 0)";
  for (pid_t rank : orphansOfThisTest()) ::kill(rank, SIGKILL);  // the other rank
  const std::vector<std::string> left = temporariesIn(ckpt);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].rfind(kTemporaryPrefix + std::to_string(writer) + "@", 0), 0u) << left[0];

  // A dead writer's temporary of a file no step rewrites: only the start-up sweep removes it.
  const pid_t gone = spawnShell("true");
  ASSERT_EQ(::waitpid(gone, &status, 0), gone);
  const std::string other = ".notes.txt.tmp." + std::to_string(gone) + "@" + tl::hostName() + ".Ab12Cd";
  std::ofstream(tl::joinPath(ckpt, other)) << "partial";

  auto resumed = runCommand(tl::testing::mpirunPrefix(2) + TL_LAUNCH_BIN + " --resume " + ckpt +
                                " --output-dir " + out + " --checkpoint-every 1",
                            300, out);
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  EXPECT_TRUE(std::filesystem::exists(ckpt + "/checkpoint.tl"));
  EXPECT_EQ(temporariesIn(ckpt), std::vector<std::string>{}) << resumed.err;
  const std::string said = resumed.out + resumed.err;
  EXPECT_NE(said.find("removed " + tl::joinPath(ckpt, other)), std::string::npos) << said;
  while (::waitpid(-1, &status, WNOHANG) > 0) {
  }
}

}  // namespace
