// tl-coordinator as a real process: started on demand (once, even when several processes ask
// at the same moment), killed with SIGKILL under running jobs, replaced by a fresh one, and
// serving job processes that come and go.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "common/check.h"
#include "common/files.h"
#include "coordinator/allocator.h"
#include "coordinator/coordinator_client.h"
#include "coordinator/ensure_coordinator.h"
#include "tests/support/run_command.h"
#include "tests/coordinator/coordinator_test_util.h"

namespace tl::coordinator {
namespace {

using test_util::RawConnection;
using test_util::syntheticWindow;
using test_util::waitFor;

const std::string kBinary = TL_COORDINATOR_BIN;

EnsureCoordinatorOptions withArgs(std::vector<std::string> args) {
  EnsureCoordinatorOptions options;
  options.extraArgs = std::move(args);
  return options;
}

using test_util::CoordinatorCleanup;
using test_util::coordinatorGone;
using test_util::coordinatorPid;

TEST(CoordinatorProcess, EnsureStartsOneAndReusesIt) {
  auto dir = test_util::freshRunDir("tuning_ensure");
  CoordinatorCleanup cleanup{dir};
  EXPECT_TRUE(ensureCoordinator(dir, kBinary, withArgs({"--loader-cores", "3"})));
  const pid_t pid = coordinatorPid(dir);
  EXPECT_NE(pid, ::getpid());
  EXPECT_FALSE(ensureCoordinator(dir, kBinary));
  EXPECT_EQ(coordinatorPid(dir), pid);
  {
    RawConnection garbage(dir);
    garbage.send("{\"type\":\n");
    EXPECT_EQ(garbage.readLine().rfind("{\"message\":\"not valid JSON", 0), 0u);
  }
  RawConnection job(dir);
  EXPECT_EQ(test_util::assignedWorkers(job.registerJob("j/0", ::getpid())), 3);
  std::string log = readFile(logPath(dir));
  EXPECT_EQ(::tl::testing::countOccurrences(log, "serving"), 1) << log;
  EXPECT_NE(log.find("rejected: not valid JSON"), std::string::npos) << log;
}

TEST(CoordinatorProcess, ConcurrentStartsMakeExactlyOne) {
  for (int trial = 0; trial < 4; ++trial) {
    auto dir = test_util::freshRunDir("tuning_race" + std::to_string(trial));
    CoordinatorCleanup cleanup{dir};
    int gate[2];
    ASSERT_EQ(::pipe(gate), 0);
    std::vector<pid_t> children;
    for (int c = 0; c < 3; ++c) {
      pid_t child = ::fork();
      if (child == 0) {
        char go;
        ::close(gate[1]);
        if (::read(gate[0], &go, 1) != 1) ::_exit(3);
        try {
          ::_exit(ensureCoordinator(dir, kBinary) ? 10 : 11);
        } catch (...) {
          ::_exit(4);
        }
      }
      children.push_back(child);
    }
    ::close(gate[0]);
    ASSERT_EQ(::write(gate[1], "ggg", 3), 3);  // release all three at once
    ::close(gate[1]);
    int started = 0, found = 0;
    for (pid_t child : children) {
      int status = 0;
      ::waitpid(child, &status, 0);
      ASSERT_TRUE(WIFEXITED(status));
      started += WEXITSTATUS(status) == 10;
      found += WEXITSTATUS(status) == 11;
    }
    EXPECT_EQ(started, 1) << "trial " << trial;
    EXPECT_EQ(found, 2) << "trial " << trial;
    // The coordinator listens before it logs "serving", so a starter can return first.
    auto servingLines = [&] {
      return ::tl::testing::countOccurrences(readFile(logPath(dir)), "serving");
    };
    waitFor([&] { return servingLines() > 0; }, 5);
    EXPECT_EQ(servingLines(), 1) << "trial " << trial << "\n" << readFile(logPath(dir));
  }
}

TEST(CoordinatorProcess, StartFailuresAreClearErrors) {
  auto dir = test_util::freshRunDir("tuning_badbin");
  EXPECT_THROW(ensureCoordinator(dir, dir + "/no-such-binary"), InputError);
  EnsureCoordinatorOptions quick;
  quick.timeoutSeconds = 0.5;
  try {
    ensureCoordinator(dir, "/bin/true", quick);  // runs, never listens
    ADD_FAILURE() << "no error";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("coordinator.log"), std::string::npos) << e.what();
  }
}

TEST(CoordinatorProcess, JobsSurviveASigkilledCoordinatorAndJoinTheNextOne) {
  auto dir = test_util::freshRunDir("tuning_sigkill");
  CoordinatorCleanup cleanup{dir};
  ASSERT_TRUE(ensureCoordinator(dir, kBinary, withArgs({"--loader-cores", "4"})));
  const pid_t first = coordinatorPid(dir);
  std::vector<std::unique_ptr<CoordinatorClient>> clients;
  std::vector<int> workers{1, 1};
  for (const char* id : {"a/0", "b/0"}) {
    clients.push_back(std::make_unique<CoordinatorClient>(
        CoordinatorClientOptions{dir, id, 0, 1, 1, 8, "", 0.05}));
    ASSERT_TRUE(clients.back()->connect());
  }
  auto poll = [&] {
    for (size_t j = 0; j < clients.size(); ++j) {
      if (auto w = clients[j]->pendingWorkers()) workers[j] = *w;
    }
  };
  ASSERT_TRUE(waitFor(
      [&] {
        poll();
        return workers[0] == 2 && workers[1] == 2;
      },
      5));

  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(waitFor([&] { return !clients[0]->connected() && !clients[1]->connected(); }, 5));
  for (int i = 0; i < 100; ++i) {  // writes to a dead socket: no SIGPIPE, no throw
    ReportMessage window = syntheticWindow({0, 0.01, 1e9}, 2, 1.0);
    for (auto& client : clients) client->report(window.loader, window.compute, 0);
  }
  poll();
  EXPECT_EQ(workers, (std::vector<int>{2, 2}));
  EXPECT_EQ(clients[0]->currentWorkers(), 2);

  // The socket file of the killed coordinator is still there; a fresh one replaces it.
  EXPECT_TRUE(fileExists(socketPath(dir)));
  ASSERT_TRUE(waitFor([&] { return coordinatorGone(dir); }, 5));
  EXPECT_TRUE(ensureCoordinator(dir, kBinary, withArgs({"--loader-cores", "6"})));
  EXPECT_NE(coordinatorPid(dir), first);
  EXPECT_TRUE(waitFor(
      [&] {
        poll();
        return clients[0]->connected() && clients[1]->connected() && workers[0] + workers[1] == 6;
      },
      10))
      << workers[0] << " " << workers[1];
}

// ~1200 idle connections under a 1024-descriptor limit, scaled down: a coordinator limited to
// 64 descriptors gets 300 connections that never register. It must neither spin on a failing
// accept() nor log per turn, and a job that comes later must still be served.
TEST(CoordinatorProcess, IdleConnectionsAtTheDescriptorLimitNeitherSpinNorLockJobsOut) {
  auto dir = test_util::freshRunDir("tuning_fdlimit");
  CoordinatorCleanup cleanup{dir};
  pid_t coordinator = ::fork();
  if (coordinator == 0) {
    rlimit limit{64, 64};
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::execl(kBinary.c_str(), kBinary.c_str(), "--run-dir", dir.c_str(), "--loader-cores", "2",
            "--idle-exit-seconds", "0", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_TRUE(waitFor([&] { return test_util::connectWithoutWaiting(dir).valid(); }, 10));
  std::vector<Fd> idle;
  for (int i = 0; i < 300; ++i) {
    if (Fd fd = test_util::connectWithoutWaiting(dir); fd.valid())
      idle.push_back(std::move(fd));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it take in the burst

  const double cpuBefore = test_util::cpuSeconds(coordinator);
  const size_t logBefore = readFile(logPath(dir)).size();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double cpuUsed = test_util::cpuSeconds(coordinator) - cpuBefore;
  const size_t logGrowth = readFile(logPath(dir)).size() - logBefore;

  Fd late;
  EXPECT_TRUE(waitFor(
      [&] {
        late = test_util::connectWithoutWaiting(dir);
        return late.valid();
      },
      5))
      << "the listen backlog stayed full";
  std::string answer;
  if (late.valid()) answer = RawConnection(std::move(late)).registerJob("late/0", ::getpid());
  ::kill(coordinator, SIGTERM);
  ::waitpid(coordinator, nullptr, 0);

  std::string log = readFile(logPath(dir));
  EXPECT_EQ(answer.empty() ? -1 : test_util::assignedWorkers(answer), 2)
      << "a job arriving after the idle connections got no answer";
  EXPECT_LT(logGrowth, 4096u) << "the log grew by " << logGrowth << " bytes in 1 s of idling";
  EXPECT_LT(cpuUsed, 0.5) << "the coordinator used " << cpuUsed << " CPU s in 1 s of idling";
  EXPECT_NE(log.find("connection limit"), std::string::npos) << log.substr(0, 2000);
  std::printf("idle second at the descriptor limit: %.3f CPU s, log +%zu bytes\n", cpuUsed,
              logGrowth);
}

// A coordinator that is alive but does not answer (stopped, its listen backlog full): the
// job's connect() returns within its timeout with the job's own pool size, and the job
// attaches once the coordinator answers again.
TEST(CoordinatorProcess, AJobDoesNotWaitForACoordinatorThatNeverAnswers) {
  auto dir = test_util::freshRunDir("tuning_stopped");
  CoordinatorCleanup cleanup{dir};
  ASSERT_TRUE(ensureCoordinator(dir, kBinary, withArgs({"--loader-cores", "2"})));
  const pid_t coordinator = coordinatorPid(dir);
  ASSERT_EQ(::kill(coordinator, SIGSTOP), 0);
  std::vector<Fd> backlog;
  for (int i = 0; i < 4096; ++i) {
    Fd fd = test_util::connectWithoutWaiting(dir);
    if (!fd.valid()) break;
    backlog.push_back(std::move(fd));
  }
  ASSERT_FALSE(test_util::connectWithoutWaiting(dir).valid()) << "the backlog never filled";

  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t job = ::fork();
  if (job == 0) {
    ::close(report[0]);
    CoordinatorClient client(CoordinatorClientOptions{dir, "patient/0", 0, 3, 1, 8, kBinary, 0.1});
    const bool attached = client.connect();
    char verdict = attached ? 'a' : client.currentWorkers() == 3 ? 'f' : 'w';
    (void)!::write(report[1], &verdict, 1);
    bool resized = waitFor([&] { return client.pendingWorkers() == 2; }, 10);
    ::_exit(resized ? 0 : 1);
  }
  ::close(report[1]);
  pollfd readable{report[0], POLLIN, 0};
  char verdict = 0;
  if (::poll(&readable, 1, 5000) == 1) (void)!::read(report[0], &verdict, 1);
  ::close(report[0]);
  ::kill(coordinator, SIGCONT);
  backlog.clear();
  if (verdict == 0) ::kill(job, SIGKILL);
  int status = 0;
  ::waitpid(job, &status, 0);
  ASSERT_NE(verdict, 0) << "connect() did not return within 5 s";
  EXPECT_EQ(verdict, 'f') << "a: it claims to be attached; w: it lost its own pool size";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "it did not attach once the coordinator answered (status " << status << ")";
}

// A synthetic job process: starts the coordinator itself if needed, follows its assignments
// for `seconds`, and writes every size it was given to `trace` ("<seconds> <workers>").
[[noreturn]] void runJobProcess(const std::string& dir, const std::string& id,
                                ThroughputModel truth, double seconds, const std::string& trace) {
  try {
    std::ofstream out(trace);
    auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    CoordinatorClient client(CoordinatorClientOptions{dir, id, 0, 1, 1, 8, kBinary, 0.1});
    if (!client.connect()) ::_exit(5);
    int workers = 1;
    while (elapsed() < seconds) {
      if (auto w = client.pendingWorkers()) {
        workers = *w;
        out << elapsed() << " " << workers << std::endl;
      }
      ReportMessage window = syntheticWindow(truth, workers, 1.0);
      client.report(window.loader, window.compute, window.waitSeconds);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  } catch (...) {
    ::_exit(6);
  }
  ::_exit(0);
}

std::vector<std::pair<double, int>> readTrace(const std::string& path) {
  std::vector<std::pair<double, int>> trace;
  std::istringstream in(readFile(path));
  double t;
  int w;
  while (in >> t >> w) trace.emplace_back(t, w);
  return trace;
}

TEST(CoordinatorProcess, JobProcessesShareTheNodeAndInheritWhatALeaverFrees) {
  auto dir = test_util::freshRunDir("tuning_jobs");
  CoordinatorCleanup cleanup{dir};
  // The first job starts the coordinator; fix its budget so the test does not depend on
  // this machine's cores.
  ASSERT_TRUE(ensureCoordinator(dir, kBinary, withArgs({"--loader-cores", "5"})));
  const ThroughputModel fast{0.0005, 0.004, 2000}, bound{0, 0.004, 200};
  const std::vector<int> best = bestStaticSplit({{fast, 1, 8}, {bound, 1, 8}}, 5);
  ASSERT_EQ(best, (std::vector<int>{4, 1}));
  // "bound" runs 2.5 s, "fast" 5 s: after "bound" leaves, "fast" gets all 5 cores.
  pid_t shortJob = ::fork();
  if (shortJob == 0) runJobProcess(dir, "bound/0", bound, 2.5, dir + "/bound.trace");
  pid_t longJob = ::fork();
  if (longJob == 0) runJobProcess(dir, "fast/0", fast, 5.0, dir + "/fast.trace");
  for (pid_t child : {shortJob, longJob}) {
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  auto boundTrace = readTrace(dir + "/bound.trace");
  auto fastTrace = readTrace(dir + "/fast.trace");
  ASSERT_FALSE(boundTrace.empty());
  ASSERT_FALSE(fastTrace.empty());
  EXPECT_EQ(boundTrace.back().second, best[1]);
  int fastBeforeLeave = 0;
  for (auto& [t, w] : fastTrace) {
    if (t < 2.4) fastBeforeLeave = w;
  }
  EXPECT_EQ(fastBeforeLeave, best[0]) << readFile(logPath(dir));
  // With "bound" alive, 5 cores are 4 + 1: the last size can only come after it left.
  EXPECT_EQ(fastTrace.back().second, 5) << readFile(logPath(dir));
}

}  // namespace
}  // namespace tl::coordinator
