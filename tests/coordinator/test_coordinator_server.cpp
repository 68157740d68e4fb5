// The coordinator over real sockets, with the server on a thread of this process: clients
// get assignments that add up to the budget, measurements move cores, leaving (or dying)
// frees them, malformed messages are turned away without harm, and clients ride out a
// coordinator that goes away.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>

#include "common/check.h"
#include "common/files.h"
#include "coordinator/coordinator_client.h"
#include "coordinator/coordinator_server.h"
#include "tests/support/run_command.h"
#include "tests/coordinator/coordinator_test_util.h"

namespace tl::coordinator {
namespace {

using test_util::RawConnection;
using test_util::syntheticWindow;
using test_util::waitFor;

struct InProcessCoordinator {
  explicit InProcessCoordinator(const CoordinatorOptions& options)
      : server(options), thread([this] { server.run(); }) {}
  ~InProcessCoordinator() {
    server.requestStop();
    thread.join();
  }
  CoordinatorServer server;
  std::thread thread;
};

CoordinatorOptions optionsFor(const std::string& runDir, int loaderCores) {
  CoordinatorOptions options;
  options.runDir = runDir;
  options.balancer.loaderCores = loaderCores;
  options.idleExitSeconds = 0;
  options.livenessCheckSeconds = 0.05;
  return options;
}

// A client plus the synthetic job it measures; applies assignments like a training loop.
struct SimulatedJob {
  SimulatedJob(const std::string& runDir, const std::string& id, ThroughputModel model,
               double reconnectSeconds = 0)
      : truth(model),
        client(CoordinatorClientOptions{runDir, id, 0, 1, 1, 8, "", reconnectSeconds}) {}
  void step() {
    if (auto w = client.pendingWorkers()) workers = *w;
    ReportMessage window = syntheticWindow(truth, workers, 1.0);
    client.report(window.loader, window.compute, window.waitSeconds);
  }
  ThroughputModel truth;
  CoordinatorClient client;
  int workers = 1;
};

// Steps every job until `done` holds (true) or the time is up (false).
bool runUntil(std::vector<std::unique_ptr<SimulatedJob>>& jobs, const std::function<bool()>& done,
              double seconds = 10) {
  return waitFor(
      [&] {
        for (auto& job : jobs) job->step();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return done();
      },
      seconds);
}

int totalWorkers(const std::vector<std::unique_ptr<SimulatedJob>>& jobs) {
  int total = 0;
  for (auto& job : jobs) total += job->workers;
  return total;
}

TEST(CoordinatorServer, AssignmentsAddUpToTheBudget) {
  auto dir = test_util::freshRunDir("tuning_budget");
  InProcessCoordinator coordinator(optionsFor(dir, 6));
  std::vector<std::unique_ptr<SimulatedJob>> jobs;
  for (const char* id : {"a/0", "b/0", "c/0"}) {
    jobs.push_back(std::make_unique<SimulatedJob>(dir, id, ThroughputModel{0, 0.01, 1e9}));
    ASSERT_TRUE(jobs.back()->client.connect());
  }
  // Before any report: the fair share, 2 each.
  EXPECT_TRUE(waitFor(
      [&] {
        for (auto& job : jobs) {
          if (auto w = job->client.pendingWorkers()) job->workers = *w;
        }
        return jobs[0]->workers == 2 && jobs[1]->workers == 2 && jobs[2]->workers == 2;
      },
      5));
  // After exploring, still the whole budget.
  EXPECT_TRUE(runUntil(jobs, [&] { return totalWorkers(jobs) == 6; }));
}

TEST(CoordinatorServer, MeasurementsMoveCoresAndLeavingFreesThem) {
  auto dir = test_util::freshRunDir("tuning_moves");
  InProcessCoordinator coordinator(optionsFor(dir, 6));
  std::vector<ThroughputModel> truths{{0.0005, 0.004, 2000}, {0, 0.004, 200}, {0.001, 0.01, 220}};
  std::vector<std::unique_ptr<SimulatedJob>> jobs;
  std::vector<JobDemand> demands;
  for (size_t j = 0; j < truths.size(); ++j) {
    jobs.push_back(std::make_unique<SimulatedJob>(dir, "job/" + std::to_string(j), truths[j]));
    ASSERT_TRUE(jobs.back()->client.connect());
    demands.push_back({truths[j], 1, 8});
  }
  const std::vector<int> best = bestStaticSplit(demands, 6);
  ASSERT_EQ(best, (std::vector<int>{4, 1, 1}));
  EXPECT_TRUE(runUntil(jobs,
                       [&] {
                         return jobs[0]->workers == best[0] && jobs[1]->workers == best[1] &&
                                jobs[2]->workers == best[2];
                       }))
      << jobs[0]->workers << " " << jobs[1]->workers << " " << jobs[2]->workers;

  jobs.erase(jobs.begin());  // the destructor sends leave
  EXPECT_TRUE(runUntil(jobs, [&] { return totalWorkers(jobs) == 6; }));
  std::string log = readFile(logPath(dir));
  EXPECT_NE(log.find("job job/0 left"), std::string::npos) << log;
}

TEST(CoordinatorServer, AJobWhosePidDiedLeaves) {
  auto dir = test_util::freshRunDir("tuning_pid");
  InProcessCoordinator coordinator(optionsFor(dir, 4));
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  RawConnection doomed(dir), survivor(dir);
  ASSERT_EQ(test_util::assignedWorkers(doomed.registerJob("doomed/0", child)), 4);
  ASSERT_EQ(test_util::assignedWorkers(survivor.registerJob("survivor/0", ::getpid())), 2);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // The connection stays open (this process holds it), yet the job is gone.
  EXPECT_EQ(test_util::assignedWorkers(survivor.readLine()), 4);
  std::string line = doomed.readLine();  // it heard the split of 2 + 2 before it died
  EXPECT_EQ(test_util::assignedWorkers(line), 2);
  EXPECT_EQ(doomed.readLine(), "<closed>");
}

TEST(CoordinatorServer, MalformedMessagesAreRejectedCleanly) {
  auto dir = test_util::freshRunDir("tuning_malformed");
  InProcessCoordinator coordinator(optionsFor(dir, 4));
  RawConnection holder(dir);
  ASSERT_EQ(test_util::assignedWorkers(holder.registerJob("holder/0")), 4);
  const std::string valid = encode(JobMessage{RegisterMessage{"x/0", 0, 0, 1, 8, 1}});
  const std::vector<std::pair<std::string, std::string>> cases{
      {"not json\n", "not valid JSON"},
      {"[1]\n", "expected a JSON object"},
      {std::string("\x01\x02\xff\xfe\n", 5), "not valid JSON"},
      {R"({"type":"report","workers":1,"busy_s":1,"images_produced":1,"compute_s":1,)"
       R"("images_consumed":1,"wait_s":0})"
       "\n",
       "the first message must be register"},
      {encode(JobMessage{RegisterMessage{"holder/0", 0, 0, 1, 8, 1}}), "already registered"},
      {valid + valid, "register sent twice"},
      {R"({"type":"register","protocol":1,"job":"y/0","pid":0,"compute_threads":0,)"
       R"("min_workers":3,"max_workers":2,"workers":1})"
       "\n",
       "max_workers"},
      {std::string(kMaxLineBytes + 10, 'x'), "longer than"},
  };
  for (const auto& [bytes, expected] : cases) {
    RawConnection peer(dir);
    ASSERT_TRUE(peer.valid());
    peer.send(bytes);
    std::string reply = peer.readLine();
    if (reply.rfind("{\"type\":\"assign\"", 0) == 0) reply = peer.readLine();  // valid+valid
    ASSERT_FALSE(reply.empty()) << "no answer to " << bytes.substr(0, 60);
    auto message = decodeCoordinatorMessage(reply);
    ASSERT_TRUE(std::holds_alternative<ErrorMessage>(message)) << reply;
    EXPECT_NE(std::get<ErrorMessage>(message).message.find(expected), std::string::npos) << reply;
    EXPECT_EQ(peer.readLine(), "<closed>");
  }
  // The coordinator is still serving, and the rejected peers left no job behind.
  RawConnection late(dir);
  EXPECT_EQ(test_util::assignedWorkers(late.registerJob("late/0")), 2);
  EXPECT_EQ(test_util::assignedWorkers(holder.readLine()), 2);
  std::string log = readFile(logPath(dir));
  EXPECT_GE(::tl::testing::countOccurrences(log, "rejected:"), int(cases.size())) << log;
}

TEST(CoordinatorServer, ExitsWhenIdleAndRemovesItsSocket) {
  auto dir = test_util::freshRunDir("tuning_idle");
  CoordinatorOptions options = optionsFor(dir, 2);
  options.idleExitSeconds = 0.3;
  CoordinatorServer server(options);
  std::atomic<bool> returned{false};
  std::thread loop([&] {
    server.run();  // returns by itself
    returned = true;
  });
  {
    RawConnection peer(dir);
    ASSERT_EQ(test_util::assignedWorkers(peer.registerJob("j/0")), 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_FALSE(returned) << "exited while a job was connected";
  }
  EXPECT_TRUE(waitFor([&] { return returned.load(); }, 5));
  loop.join();
  EXPECT_FALSE(fileExists(socketPath(dir)));
}

TEST(CoordinatorServer, ConnectionsThatNeverRegisterAreClosed) {
  auto dir = test_util::freshRunDir("tuning_unregistered");
  CoordinatorOptions options = optionsFor(dir, 2);
  options.registerTimeoutSeconds = 0.2;
  InProcessCoordinator coordinator(options);
  RawConnection silent(dir), job(dir);
  ASSERT_EQ(test_util::assignedWorkers(job.registerJob("j/0")), 2);
  EXPECT_EQ(silent.readLine(5), "<closed>");
  EXPECT_EQ(job.readLine(0.5), "") << "a registered job was closed";
}

// accept() failing with EMFILE (descriptors used up by something other than connections)
// must neither spin nor log every turn, and accepting resumes once descriptors are free.
TEST(CoordinatorServer, AcceptFailuresBackOffInsteadOfSpinning) {
  auto dir = test_util::freshRunDir("tuning_emfile");
  pid_t server = ::fork();
  if (server == 0) {
    CoordinatorServer coordinator(optionsFor(dir, 2));
    int lowestFree = ::dup(0);
    ::close(lowestFree);
    rlimit limit{rlim_t(lowestFree + 2), rlim_t(lowestFree + 2)};  // room for 2 connections
    ::setrlimit(RLIMIT_NOFILE, &limit);
    coordinator.run();
    ::_exit(0);
  }
  ASSERT_TRUE(waitFor([&] { return test_util::connectWithoutWaiting(dir).valid(); }, 10));
  std::vector<Fd> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(test_util::connectWithoutWaiting(dir));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double cpuBefore = test_util::cpuSeconds(server);
  const size_t logBefore = readFile(logPath(dir)).size();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double cpuUsed = test_util::cpuSeconds(server) - cpuBefore;
  const size_t logGrowth = readFile(logPath(dir)).size() - logBefore;
  idle.clear();
  RawConnection job(dir);
  std::string answer = job.registerJob("j/0", ::getpid());
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  std::string log = readFile(logPath(dir));
  EXPECT_LT(cpuUsed, 0.5) << "the coordinator used " << cpuUsed << " CPU s in 1 s";
  EXPECT_LT(logGrowth, 1024u) << log.substr(0, 2000);
  EXPECT_EQ(::tl::testing::countOccurrences(log, "Too many open files"), 1) << log;
  EXPECT_EQ(answer.empty() ? -1 : test_util::assignedWorkers(answer), 2) << log;
}

TEST(CoordinatorServer, OneCoordinatorPerRunDirectory) {
  auto dir = test_util::freshRunDir("tuning_single");
  InProcessCoordinator first(optionsFor(dir, 2));
  EXPECT_THROW({ CoordinatorServer second(optionsFor(dir, 2)); }, InputError);
}

TEST(CoordinatorClient, WithoutACoordinatorTheJobRunsOn) {
  auto dir = test_util::freshRunDir("tuning_nobody");
  auto start = std::chrono::steady_clock::now();
  {
    CoordinatorClient client(CoordinatorClientOptions{dir, "lonely/0", 1, 3, 1, 8, "", 0});
    EXPECT_FALSE(client.connect());
    client.report({3, 1, 100}, {1, 100}, 0);
    EXPECT_FALSE(client.pendingWorkers());
    EXPECT_EQ(client.currentWorkers(), 3);
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2);
  CoordinatorClientOptions noId{dir, "", 1, 1, 1, 8, "", 0};
  EXPECT_THROW({ CoordinatorClient client(noId); }, InputError);
  CoordinatorClientOptions noWorkers{dir, "j", 1, 1, 0, 8, "", 0};
  EXPECT_THROW({ CoordinatorClient client(noWorkers); }, InputError);
}

TEST(CoordinatorClient, KeepsItsSizeWhenTheCoordinatorGoesAndRejoinsTheNextOne) {
  auto dir = test_util::freshRunDir("tuning_rejoin");
  std::vector<std::unique_ptr<SimulatedJob>> jobs;
  auto coordinator = std::make_unique<InProcessCoordinator>(optionsFor(dir, 4));
  for (const char* id : {"a/0", "b/0"}) {
    jobs.push_back(std::make_unique<SimulatedJob>(dir, id, ThroughputModel{0, 0.01, 1e9}, 0.05));
    ASSERT_TRUE(jobs.back()->client.connect());
  }
  ASSERT_TRUE(runUntil(jobs, [&] { return totalWorkers(jobs) == 4; }));
  coordinator.reset();
  ASSERT_TRUE(
      waitFor([&] { return !jobs[0]->client.connected() && !jobs[1]->client.connected(); }, 5));
  for (auto& job : jobs) job->step();  // what was assigned before the loss
  const int before0 = jobs[0]->workers, before1 = jobs[1]->workers;
  for (int i = 0; i < 50; ++i) {
    for (auto& job : jobs) job->step();  // reports into the void: no throw, no SIGPIPE
  }
  EXPECT_EQ(jobs[0]->workers, before0);
  EXPECT_EQ(jobs[1]->workers, before1);
  EXPECT_FALSE(jobs[0]->client.pendingWorkers());

  CoordinatorOptions options = optionsFor(dir, 6);
  coordinator = std::make_unique<InProcessCoordinator>(options);
  EXPECT_TRUE(runUntil(jobs, [&] {
    return jobs[0]->client.connected() && jobs[1]->client.connected() && totalWorkers(jobs) == 6;
  }));
}

}  // namespace
}  // namespace tl::coordinator
