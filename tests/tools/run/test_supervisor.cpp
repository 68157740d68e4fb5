// tl-run's supervisor without mpirun: launches are faked (they leave the files a real job would:
// copies through the recovery-file writer, step records in metrics.jsonl), and the tests check
// the outcome of each, the commands and sizes of the relaunches and the history they are told.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/check.h"
#include "elastic/recovery/recovery_files.h"
#include "tools/run/supervisor.h"

namespace tl::run {
namespace {

namespace fs = std::filesystem;
using elastic::CandidateInfo;

// What a fake launch does: given the launch's plan, leave files and return mpirun's status.
using FakeLaunch = std::function<int(const LaunchPlan&)>;

class FakeJob {
 public:
  FakeJob() {
    out_ = fs::temp_directory_path() / ("tl_supervisor_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(out_);
    fs::create_directories(out_);
    o.processes = 4;
    o.maxRestarts = 3;
    o.mpirun = "MPI";
    o.launch = "TL";
    o.launchArgs = {"--model", "cnn", "--output-dir", out_.string(), "--placement", "2,2,2,2"};
  }
  ~FakeJob() { fs::remove_all(out_); }

  // Runs supervise() with `launches` in turn (a launch past the script fails the test).
  int run(std::vector<FakeLaunch> launches) {
    size_t next = 0;
    return supervise(o, [&](const std::vector<std::string>& argv, const LaunchPlan& plan) {
      commands.push_back(argv);
      plans.push_back(plan);
      if (next >= launches.size()) {
        ADD_FAILURE() << "launch " << next << " was not expected";
        return LaunchExit{0, false};
      }
      return LaunchExit{launches[next++](plan), false};
    });
  }

  elastic::RecoveryPaths paths() const { return {fs::absolute(out_ / "recovery").lexically_normal().string()}; }
  // Rank r wrote its copy of step `step` (its checkpoint, then its info), naming `missing`.
  // With `held`, a held copy (recovery/held) of a process whose host took itself for cut off.
  void copy(int r, int64_t step, const std::vector<std::string>& hosts,
            std::vector<int> missing = {}, bool timedOut = false, bool held = false) {
    const elastic::RecoveryPaths where = held ? paths().held() : paths();
    fs::create_directories(where.candidateDir(r));
    std::ofstream(where.candidateCheckpoint(r)) << "copy of rank " << r;
    CandidateInfo info;
    info.rank = r;
    info.step = step;
    info.completedStep = step + 1;
    info.reason = held       ? "this host was cut off from the job: nothing heard"
                  : timedOut ? "mpi allreduce timed out"
                             : "ended by mpirun";
    info.timedOut = timedOut;
    info.missingRanks = std::move(missing);
    for (size_t i = 0; i < hosts.size(); ++i) info.members.push_back({int(i), hosts[i], 0});
    elastic::writeCandidateInfo(where, info);
  }
  void logStep(int64_t step) {
    std::ofstream(out_ / "metrics.jsonl", std::ios::app) << R"({"type":"step","step":)" << step << "}\n";
  }
  std::vector<std::string> metricsLines() const {
    std::ifstream in(out_ / "metrics.jsonl");
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
  elastic::RecoveryHistory history() const { return elastic::readHistory(paths()); }

  SupervisorOptions o;
  std::vector<std::vector<std::string>> commands;
  std::vector<LaunchPlan> plans;

 private:
  fs::path out_;
};

std::string valueAfter(const std::vector<std::string>& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

bool has(const std::vector<std::string>& argv, const std::string& flag) {
  return std::find(argv.begin(), argv.end(), flag) != argv.end();
}

TEST(Supervisor, OutcomesOfALaunch) {
  EXPECT_EQ(classify({0, false}, false, false), Outcome::Finished);
  EXPECT_EQ(classify({0, true}, true, true), Outcome::Finished);
  EXPECT_EQ(classify({130, true}, true, true), Outcome::Interrupted);
  EXPECT_EQ(classify({2, false}, false, false), Outcome::BadInput);
  EXPECT_EQ(classify({2, false}, true, true), Outcome::Lost) << "copies: a rank was lost, whatever the status";
  EXPECT_EQ(classify({1, false}, false, false), Outcome::LostBeforeFirstStep);
  EXPECT_EQ(classify({137, false}, false, true), Outcome::LostWithoutCopy);
  EXPECT_EQ(classify({137, false}, true, false), Outcome::Lost);
  EXPECT_STREQ(outcomeName(Outcome::LostWithoutCopy), "lost without a copy");
}

TEST(Supervisor, TheFirstLaunchRunsTheJobAsGiven) {
  FakeJob job;
  job.o.mpirunArgs = {"--oversubscribe"};
  job.o.hangTimeoutSeconds = 7;
  EXPECT_EQ(job.run({[](const LaunchPlan&) { return 0; }}), 0);
  ASSERT_EQ(job.commands.size(), 1u);
  const auto& argv = job.commands[0];
  EXPECT_EQ(argv[0], "MPI");
  EXPECT_TRUE(has(argv, "--oversubscribe"));
  EXPECT_FALSE(has(argv, "--host"));
  EXPECT_EQ(valueAfter(argv, "-np"), "4");
  EXPECT_EQ(valueAfter(argv, "odls_base_sigkill_timeout"), "20");
  EXPECT_EQ(valueAfter(argv, "--placement"), "2,2,2,2");
  EXPECT_EQ(valueAfter(argv, "--recovery-dir"), job.paths().dir);
  EXPECT_EQ(valueAfter(argv, "--collective-timeout").substr(0, 1), "7");
  EXPECT_FALSE(has(argv, "--resume"));
  EXPECT_TRUE(job.history().failures.empty());
}

TEST(Supervisor, ALostRankRelaunchesOnTheSurvivorsFromTheNewestCopy) {
  FakeJob job;
  const std::vector<std::string> hosts{"a", "a", "a", "a"};
  const int rc = job.run({[&](const LaunchPlan&) {
                            job.logStep(5);
                            job.copy(0, 5, hosts);
                            job.copy(1, 6, hosts);
                            job.copy(2, 6, hosts);
                            return 137;  // rank 3 killed
                          },
                          [&](const LaunchPlan&) { return 0; }});
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(job.plans.size(), 2u);
  EXPECT_EQ(job.plans[1].processes, 3);
  EXPECT_EQ(job.plans[1].resume, job.paths().keptState(0));
  const auto& again = job.commands[1];
  EXPECT_EQ(valueAfter(again, "-np"), "3");
  EXPECT_EQ(valueAfter(again, "--resume"), job.paths().keptState(0));
  EXPECT_FALSE(has(again, "--placement")) << "a fixed placement of 4 processes does not fit 3";
  EXPECT_TRUE(fs::exists(job.paths().keptState(0) + "/checkpoint.tl"));
  EXPECT_FALSE(fs::exists(job.paths().candidates())) << "the next launch writes new copies";
  const auto h = job.history();
  ASSERT_EQ(h.failures.size(), 1u);
  EXPECT_EQ(h.failures[0].lostRanks, (std::vector<int>{3}));
  EXPECT_EQ(h.failures[0].detectedBy, "mpirun");
  EXPECT_EQ(h.failures[0].boundaryStep, 6);
  EXPECT_EQ(h.failures[0].stepsRecomputed, 1);
  EXPECT_EQ(h.failures[0].processesBefore, 4);
  EXPECT_EQ(h.failures[0].processesAfter, std::optional<int>(3));
  EXPECT_EQ(h.failures[0].copies, std::optional<size_t>(3));
}

// The lead's host went down silently holding half the members: the other half took itself for
// cut off, left held copies and ended, and nothing else is left: tl-run restarts from them.
TEST(Supervisor, HeldCopiesAreTheJobWhenTheSideThatWentOnLeftNone) {
  FakeJob job;
  const std::vector<std::string> hosts{"a", "a", "b", "b"};
  const int rc = job.run({[&](const LaunchPlan&) {
                            job.logStep(5);
                            job.copy(2, 5, hosts, {0, 1}, false, /*held=*/true);
                            job.copy(3, 5, hosts, {0, 1}, false, /*held=*/true);
                            return 137;
                          },
                          [&](const LaunchPlan&) { return 0; }});
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(job.plans.size(), 2u);
  EXPECT_EQ(job.plans[1].resume, job.paths().keptState(0));
  EXPECT_TRUE(fs::exists(job.paths().keptState(0) + "/checkpoint.tl"));
  EXPECT_FALSE(fs::exists(job.paths().held().dir)) << "held copies are used once";
  const auto h = job.history();
  ASSERT_EQ(h.failures.size(), 1u);
  EXPECT_EQ(h.failures[0].lostRanks, (std::vector<int>{0, 1}));
  EXPECT_EQ(h.failures[0].lostHosts, (std::vector<std::string>{"a"}));
  EXPECT_EQ(h.failures[0].detectedBy, "member-watcher");
  EXPECT_EQ(h.failures[0].boundaryStep, 5);
}

// The side that kept the quorum went on: its finished job or its own copies count, never the
// held copies of the side that cut itself off (they are older, and that side is not the job).
TEST(Supervisor, HeldCopiesAreIgnoredWhenTheOtherSideFinishedOrLeftCopies) {
  {
    FakeJob job;
    const std::vector<std::string> hosts{"a", "a", "b", "b"};
    EXPECT_EQ(job.run({[&](const LaunchPlan&) {
      job.copy(2, 5, hosts, {0, 1}, false, /*held=*/true);
      job.logStep(9);
      return 0;
    }}),
              0);
    EXPECT_EQ(job.plans.size(), 1u);
    EXPECT_FALSE(fs::exists(job.paths().held().dir)) << "a finished job leaves nothing held";
  }
  {
    FakeJob job;
    const std::vector<std::string> hosts{"a", "a", "b", "b"};
    EXPECT_EQ(job.run({[&](const LaunchPlan&) {
                         job.copy(2, 5, hosts, {0, 1}, false, /*held=*/true);
                         job.copy(3, 5, hosts, {0, 1}, false, /*held=*/true);
                         job.logStep(9);
                         job.copy(0, 9, hosts);
                         return 137;
                       },
                       [&](const LaunchPlan&) { return 0; }}),
              0);
    ASSERT_EQ(job.plans.size(), 2u);
    const auto h = job.history();
    ASSERT_EQ(h.failures.size(), 1u);
    EXPECT_EQ(h.failures[0].boundaryStep, 9) << "the side that went on's own copy";
    EXPECT_EQ(h.failures[0].detectedBy, "mpirun");
    EXPECT_FALSE(fs::exists(job.paths().held().dir));
  }
}

TEST(Supervisor, AHungRankIsDetectedByTheTimeout) {
  FakeJob job;
  job.o.processes = 3;
  job.o.launchArgs.resize(4);  // no --placement
  const std::vector<std::string> hosts{"a", "a", "a"};
  EXPECT_EQ(job.run({[&](const LaunchPlan&) {
                       job.copy(0, 2, hosts, {1}, true);
                       job.copy(2, 2, hosts, {1}, true);
                       return 1;
                     },
                     [&](const LaunchPlan&) { return 0; }}),
            0);
  const auto h = job.history();
  ASSERT_EQ(h.failures.size(), 1u);
  EXPECT_EQ(h.failures[0].detectedBy, "hang-timeout");
  EXPECT_EQ(h.failures[0].lostRanks, (std::vector<int>{1}));
  EXPECT_EQ(job.plans[1].processes, 2);
}

TEST(Supervisor, LostHostsAreLeftOutAndTheSizeFollowsTheHostsThatRemain) {
  FakeJob job;
  job.o.processes = 3;
  job.o.hosts = {{"a", 2}, {"b", 2}};
  const std::vector<std::string> hosts{"a", "a", "b"};
  EXPECT_EQ(job.run({[&](const LaunchPlan&) {
                       job.copy(0, 4, hosts, {2}, true);
                       job.copy(1, 4, hosts, {2}, true);
                       return 137;
                     },
                     [&](const LaunchPlan&) { return 0; }}),
            0);
  EXPECT_EQ(valueAfter(job.commands[0], "--host"), "a:2,b:2");
  EXPECT_EQ(valueAfter(job.commands[1], "--host"), "a:2");
  EXPECT_EQ(valueAfter(job.commands[1], "-np"), "2");
  EXPECT_EQ(job.history().failures.at(0).lostHosts, std::optional<std::vector<std::string>>({"b"}));
}

TEST(Supervisor, NextLaunchSizing) {
  SupervisorOptions o;
  o.processes = 5;
  elastic::FailureReport report;
  report.survivors = 3;
  const LaunchPlan lost{2, 4, {}, "old"};
  const LaunchPlan next = nextLaunch(o, lost, report, "kept");
  EXPECT_EQ(next.launch, 3);
  EXPECT_EQ(next.processes, 3) << "without hosts: the survivors";
  EXPECT_EQ(next.resume, "kept");
  report.survivors = 0;
  EXPECT_EQ(nextLaunch(o, lost, report, "kept").processes, 1) << "at least one process";
  // With hosts: what the hosts that remain hold, up to the first launch's size.
  const LaunchPlan onHosts{0, 5, {{"a", 4}, {"b", 2}, {"c", 2}}, ""};
  report.lostHosts = {"b"};
  const LaunchPlan fewer = nextLaunch(o, onHosts, report, "kept");
  EXPECT_EQ(fewer.hosts.size(), 2u);
  EXPECT_EQ(fewer.hosts[1].host, "c");
  EXPECT_EQ(fewer.processes, 5) << "6 slots remain; the job started on 5";
  report.lostHosts = {"a", "c"};
  EXPECT_EQ(nextLaunch(o, onHosts, report, "kept").processes, 2);
  report.lostHosts = {"a", "b", "c"};
  EXPECT_THROW(nextLaunch(o, onHosts, report, "kept"), InputError) << "every host was lost";
}

TEST(Supervisor, ALaunchLostBeforeItsFirstStepStartsAgainAsItWas) {
  FakeJob job;
  EXPECT_EQ(job.run({[](const LaunchPlan&) { return 1; }, [](const LaunchPlan&) { return 0; }}), 0);
  ASSERT_EQ(job.plans.size(), 2u);
  EXPECT_EQ(job.plans[1].processes, 4);
  EXPECT_EQ(job.commands[1], job.commands[0]) << "the same command again";
  const auto h = job.history();
  ASSERT_EQ(h.failures.size(), 1u);
  EXPECT_EQ(h.failures[0].reason, "lost before its first step");
  EXPECT_FALSE(h.failures[0].lostHosts.has_value());
}

TEST(Supervisor, BadInputIsNotRetried) {
  FakeJob job;
  EXPECT_EQ(job.run({[](const LaunchPlan&) { return 2; }}), 2);
  EXPECT_EQ(job.commands.size(), 1u);
}

TEST(Supervisor, ProgressWithoutACopyEndsTheRun) {
  FakeJob job;
  EXPECT_EQ(job.run({[&](const LaunchPlan&) {
              job.logStep(1);
              return 137;
            }}),
            1);
  const auto lines = job.metricsLines();
  ASSERT_EQ(lines.size(), 2u);
  const auto failure = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(failure["type"], "failure");
  EXPECT_EQ(failure["recovered"], false);
  EXPECT_EQ(failure["mpirun_exit_status"], 137);
}

TEST(Supervisor, OneLossMoreThanMaxRestartsEndsTheRun) {
  FakeJob job;
  job.o.maxRestarts = 1;
  job.o.launchArgs.resize(4);
  const auto loseRank3 = [&](const LaunchPlan& plan) {
    std::vector<std::string> hosts(size_t(plan.processes), "a");
    for (int r = 0; r + 1 < plan.processes; ++r) job.copy(r, 3 + plan.launch, hosts);
    return 137;
  };
  EXPECT_EQ(job.run({loseRank3, loseRank3}), 1);
  EXPECT_EQ(job.plans.size(), 2u);
  EXPECT_EQ(job.plans[1].processes, 3);
  EXPECT_EQ(job.history().failures.size(), 1u) << "the last loss goes to the metrics, not the history";
  EXPECT_TRUE(fs::exists(job.paths().keptState(1) + "/checkpoint.tl")) << "the last good copy is kept";
  EXPECT_FALSE(fs::exists(job.paths().keptState(0))) << "older kept copies are removed";
}

TEST(Supervisor, RefusesFlagsItSetsItself) {
  FakeJob job;
  job.o.launchArgs.push_back("--collective-timeout=3");
  EXPECT_THROW(job.run({}), InputError);
  job.o.launchArgs = {"--model", "cnn"};
  EXPECT_THROW(job.run({}), InputError);
  EXPECT_TRUE(job.commands.empty());
}

}  // namespace
}  // namespace tl::run
