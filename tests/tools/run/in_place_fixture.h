// What the in-place recovery tests share (test_recovery_in_place*.cpp): a tl-run job of a small
// CNN under mpirun, its lead and processes seen from outside, and the checks of how a recovery
// in place ends. Header-only; the including test is an e2e test with TOOLS tl-launch tl-data
// tl-run tl-ctl.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "tests/support/rank_processes.h"
#include "tests/support/run_command.h"

namespace tl::testing::in_place {

using json = nlohmann::json;
using tl::testing::freshDir;
using tl::testing::lastStep;
using tl::testing::rankProcesses;
using tl::testing::records;
using tl::testing::runCommand;
using tl::testing::slurp;
using tl::testing::waitUntil;

inline std::string gDataDir;
constexpr int kSteps = 16;

inline std::string jobFlags() {
  return std::string(" --dataset cifar10 --data-dir ") + gDataDir +
         " --model cnn --logical-workers 4 --batch 8 --seed 5 --log-every 0 --steps " +
         std::to_string(kSteps);
}

inline std::string tlRun(int np, const std::string& out, const std::string& own = "",
                         int hangTimeout = 20) {
  return std::string(TL_RUN_BIN) + " --np " + std::to_string(np) +
         " --max-restarts 2 --hang-timeout " + std::to_string(hangTimeout) + own + " --mpirun " +
         TL_MPIEXEC + " --mpirun-args --oversubscribe --launch " + TL_LAUNCH_BIN + " --" +
         jobFlags() + " --output-dir " + out;
}

// A tl-run job on a thread of the test: started when made, joined by join() (which returns
// tl-run's result) or, when a failed ASSERT returned early, by the destructor, so that the test
// fails instead of std::terminate on a joinable thread.
class JobThread {
 public:
  JobThread(std::string command, int timeoutS, const std::string& name)
      : thread_([this, command = std::move(command), timeoutS, dir = freshDir(name)] {
          result_ = runCommand(command, timeoutS, dir);
        }) {}
  JobThread(const JobThread&) = delete;
  JobThread& operator=(const JobThread&) = delete;
  ~JobThread() {
    if (thread_.joinable()) thread_.join();
  }
  const tl::testing::CommandResult& join() {
    if (thread_.joinable()) thread_.join();
    return result_;
  }

 private:
  tl::testing::CommandResult result_;
  std::thread thread_;
};

// Waits until the job in `out` has logged step `after` with `processes` rank processes running.
inline bool waitForRanks(const std::string& out, int64_t after, size_t processes) {
  return waitUntil([&] { return lastStep(out) >= after && rankProcesses(out).size() == processes; },
                   120);
}

// The job's lead: the rank process that holds its metrics.jsonl open (0: none found).
inline pid_t leadProcess(const std::string& out) {
  for (pid_t pid : rankProcesses(out)) {
    std::error_code ec;
    for (const auto& fd :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
      std::error_code linkError;
      if (std::filesystem::read_symlink(fd.path(), linkError).string() == out + "/metrics.jsonl")
        return pid;
    }
  }
  return 0;
}

// The job's processes by rank, as its lead reports them (tl-ctl status: "pids").
inline std::vector<pid_t> pidsByRank(const std::string& out) {
  auto status = runCommand(std::string(TL_CTL_BIN) + " status " + out + " --json", 60,
                           freshDir("recovery_in_place_status"));
  EXPECT_EQ(status.exitCode, 0) << status.err;
  if (status.exitCode != 0) return {};
  std::vector<pid_t> pids;
  const json parsed = json::parse(status.out);
  for (const json& p : parsed.at("pids")) pids.push_back(pid_t(p.get<int64_t>()));
  return pids;
}

// tl-ctl rescale JOB --processes P, answered once applied.
inline void rescaleTo(const std::string& out, int processes) {
  auto r = runCommand(std::string(TL_CTL_BIN) + " rescale " + out + " --processes " +
                          std::to_string(processes) + " --timeout 200",
                      220, freshDir("recovery_in_place_rescale"));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
}

inline bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// Every step 1..kSteps logged exactly once.
inline void expectEveryStepOnce(const std::string& out) {
  std::multiset<int64_t> steps;
  for (const json& r : records(out, "step")) steps.insert(r.value("step", int64_t(-1)));
  for (int64_t s = 1; s <= kSteps; ++s)
    EXPECT_EQ(steps.count(s), 1u) << "step " << s << " in metrics.jsonl";
  EXPECT_EQ(steps.size(), size_t(kSteps));
}

// The end of a job that recovered in place once: tl-run exited 0 without a restart, the
// uninterrupted bits, one in-place failure leaving `processesAfter` processes, nothing recomputed,
// every step logged once. Returns the failure record.
inline json expectOneInPlaceRecovery(const tl::testing::CommandResult& result,
                                     const std::string& out, const std::string& reference,
                                     int processesAfter) {
  EXPECT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err.find("restart"), std::string::npos) << result.err;
  // On one host mpirun ends by itself (tl-run ends it only when Open MPI's daemons on other
  // hosts do not report every lost process: mpirun_watch.cpp).
  EXPECT_EQ(result.err.find("mpirun has not ended"), std::string::npos) << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], reference);
  const auto failures = records(out, "failure");
  EXPECT_EQ(failures.size(), 1u);
  if (failures.empty()) return json::object();
  EXPECT_EQ(failures[0]["mode"], "in-place") << failures[0].dump();
  EXPECT_EQ(failures[0]["processes_after"], processesAfter);
  EXPECT_EQ(failures[0]["steps_recomputed"], 0);
  expectEveryStepOnce(out);
  return failures[0];
}

class InPlaceRecovery : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
#if TL_OPEN_MPI_5
    GTEST_SKIP() << "tl-run refuses --recovery in-place with Open MPI 5 (test_recovery_in_place's "
                    "InPlaceOnOpenMpi5 checks that); docs/guide/debian13.md";
#endif
    std::string error;
    gDataDir = tl::testing::makeSyntheticCifar("recovery_in_place_data", 256, 32, 4, &error);
    ASSERT_EQ(error, "");
    const std::string ref = freshDir("recovery_in_place_reference");
    auto run = runCommand(
        tl::testing::mpirunPrefix(2) + TL_LAUNCH_BIN + jobFlags() + " --output-dir " + ref, 300,
        ref);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    reference() = json::parse(slurp(ref + "/summary.json"))["params_sha256"];
  }
  static std::string& reference() {
    static std::string hash;
    return hash;
  }
#if TL_OPEN_MPI_5
  void SetUp() override { GTEST_SKIP() << "in place is refused with Open MPI 5"; }
#endif

  // Kills `victims` non-lead ranks of the `processes` running `out`, `delayMs` after step `after`
  // was logged; returns {the step logged at the kill, the kill's Unix time}.
  static std::pair<int64_t, double> killNonLead(const std::string& out, int64_t after, int delayMs,
                                                size_t processes = 3, size_t victims = 1) {
    EXPECT_TRUE(waitForRanks(out, after, processes));
    const int64_t step = lastStep(out);
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    const pid_t lead = leadProcess(out);
    std::vector<pid_t> chosen;
    for (pid_t pid : rankProcesses(out))
      if (pid != lead && lead != 0 && chosen.size() < victims) chosen.push_back(pid);
    EXPECT_EQ(chosen.size(), victims);
    const int64_t logged = lastStep(out);
    const double at = tl::unixNow();
    for (pid_t victim : chosen) ::kill(victim, SIGKILL);
    std::cout << "SIGKILL to " << chosen.size() << " rank(s) after step " << logged
              << " (waited for " << step << ")" << std::endl;
    return {logged, at};
  }
};

}  // namespace tl::testing::in_place
