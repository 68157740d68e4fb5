// Surviving lost ranks end to end: tl-run over real mpirun and tl-launch; ranks are killed
// (SIGKILL) or stopped (SIGSTOP) at random steps, chosen by a seed that is printed (set
// TL_TEST_SEED to repeat one), and the job must end on the bits of an uninterrupted run.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "common/clock.h"
#include "tests/support/consistency_csv.h"
#include "tests/support/rank_processes.h"
#include "tests/support/run_command.h"

namespace {

using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;
using json = nlohmann::json;
using tl::testing::lastStep;
using tl::testing::rankProcesses;
using tl::testing::records;
using tl::testing::waitUntil;

std::string gDataDir;
constexpr int kSteps = 64;

std::string jobFlags(int steps = kSteps) {
  return std::string(" --dataset cifar10 --data-dir ") + gDataDir +
         " --model cnn --logical-workers 4 --batch 8 --seed 5 --log-every 0 --steps " +
         std::to_string(steps);
}

std::string tlRun(int np, int maxRestarts, double hangTimeout, const std::string& out,
                  const std::string& more = "", int steps = kSteps) {
  return std::string(TL_RUN_BIN) + " --np " + std::to_string(np) + " --max-restarts " +
         std::to_string(maxRestarts) + " --hang-timeout " + std::to_string(hangTimeout) +
         " --recovery restart --mpirun " + TL_MPIEXEC + " --mpirun-args --oversubscribe --launch " + TL_LAUNCH_BIN +
         " --" + jobFlags(steps) + " --output-dir " + out + more;
}

// The job's lead: the rank process that holds its metrics.jsonl open (0: none found).
pid_t leadProcess(const std::string& out) {
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

unsigned testSeed() {
  if (const char* s = std::getenv("TL_TEST_SEED")) return unsigned(std::stoul(s));
  return unsigned(std::random_device{}());
}

// Signals a random rank of the running launch once the job has passed `step` and runs on
// `processes` processes; returns the time it was sent.
double signalRankAfter(const std::string& out, int64_t step, int processes, int signal, std::mt19937& rng) {
  EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= step && int(rankProcesses(out).size()) == processes; }, 120))
      << "the job did not reach step " << step << " on " << processes << " processes";
  const auto pids = rankProcesses(out);
  if (pids.empty()) return 0;
  const pid_t victim = pids[std::uniform_int_distribution<size_t>(0, pids.size() - 1)(rng)];
  ::kill(victim, signal);
  std::cout << "signal " << signal << " to pid " << victim << " after step " << lastStep(out) << std::endl;
  return tl::unixNow();
}

class Recovery : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    gDataDir = tl::testing::makeSyntheticCifar("recovery_data", 256, 32, 4, &error);
    ASSERT_EQ(error, "");
    const std::string ref = freshDir("recovery_reference");
    auto run = runCommand(tl::testing::mpirunPrefix(2) + TL_LAUNCH_BIN + jobFlags() + " --output-dir " + ref, 300, ref);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    referenceHash() = json::parse(slurp(ref + "/summary.json"))["params_sha256"];
  }
  static std::string& referenceHash() {
    static std::string hash;
    return hash;
  }
};

// Three ranks killed in one run, at random steps, one of them right after a periodic checkpoint
// step (the lead is writing it): 4 -> 3 -> 2 -> 1 processes, the uninterrupted bits.
TEST_F(Recovery, RandomKillsEndOnTheUninterruptedBits) {
  const unsigned seed = testSeed();
  std::cout << "seed " << seed << " (TL_TEST_SEED=" << seed << " repeats it)" << std::endl;
  RecordProperty("seed", std::to_string(seed));
  std::mt19937 rng(seed);
  const std::string out = freshDir("recovery_kills");
  tl::testing::CommandResult result;
  std::thread job([&] { result = runCommand(tlRun(4, 3, 10, out, " --checkpoint-every 8"), 300, freshDir("recovery_kills_cmd")); });
  auto between = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  signalRankAfter(out, between(3, 12), 4, SIGKILL, rng);
  // tl-ctl status shows the recovery.
  EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= 16 && int(rankProcesses(out).size()) == 3; }, 120));
  const auto status = runCommand(std::string(TL_CTL_BIN) + " status " + out + " --json", 60, freshDir("recovery_status"));
  ASSERT_EQ(status.exitCode, 0) << status.err;
  const json counts = json::parse(status.out)["recovery"];
  EXPECT_EQ(counts["failures"], 1) << status.out;
  EXPECT_EQ(counts["recoveries"], 1) << status.out;
  EXPECT_EQ(counts["last_failure"]["processes_after"], 3) << status.out;
  signalRankAfter(out, between(18, 28), 3, SIGKILL, rng);
  // The lead writes a checkpoint at every 8th boundary: a kill as it starts.
  const int64_t ck = 8 * between(4, 5);
  EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= ck - 1 && int(rankProcesses(out).size()) == 2; }, 120));
  EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= ck; }, 60));
  const auto pids = rankProcesses(out);
  if (!pids.empty()) ::kill(pids[std::uniform_int_distribution<size_t>(0, pids.size() - 1)(rng)], SIGKILL);
  job.join();
  ASSERT_EQ(result.exitCode, 0) << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], referenceHash()) << "seed " << seed;
  tl::testing::recordConsistencyCells(
      "cnn (recovery test job)", "exact",
      {{"uninterrupted -np 2 (2,2)", referenceHash()},
       {"tl-run, 3 ranks SIGKILLed: 4 -> 3 -> 2 -> 1", summary["params_sha256"]}});
  EXPECT_EQ(summary["processes"], 1);
  EXPECT_EQ(summary["recovery"]["failures"], 3);
  EXPECT_EQ(summary["recovery"]["recoveries"], 3);
  const auto failures = records(out, "failure");
  const auto recoveries = records(out, "recovery");
  ASSERT_EQ(failures.size(), 3u);
  ASSERT_EQ(recoveries.size(), 3u);
  for (size_t i = 0; i < failures.size(); ++i) {
    EXPECT_EQ(failures[i]["lost_ranks"].size(), 1u);
    EXPECT_EQ(failures[i]["processes_before"].get<int>(), 4 - int(i));
    EXPECT_EQ(failures[i]["processes_after"].get<int>(), 3 - int(i));
    EXPECT_LE(failures[i]["steps_recomputed"].get<int>(), 1) << "at most the step in flight";
    EXPECT_GT(recoveries[i]["recovery_s"].get<double>(), 0);
    EXPECT_LT(recoveries[i]["recovery_s"].get<double>(), 60);
  }
}

// A stopped rank is found by the hang timeout; with --max-restarts 1 the second loss ends the
// job with an error naming a checkpoint that is whole: resuming it by hand gives the same bits.
TEST_F(Recovery, HungRankIsDetectedAndOneLossTooManyNamesAGoodCheckpoint) {
  const unsigned seed = testSeed();
  std::cout << "seed " << seed << " (TL_TEST_SEED=" << seed << " repeats it)" << std::endl;
  std::mt19937 rng(seed);
  const std::string out = freshDir("recovery_hang");
  constexpr double kHang = 3;
  tl::testing::CommandResult result;
  std::thread job([&] { result = runCommand(tlRun(3, 1, kHang, out), 300, freshDir("recovery_hang_cmd")); });
  const double stoppedAt = signalRankAfter(out, std::uniform_int_distribution<int>(3, 15)(rng), 3, SIGSTOP, rng);
  signalRankAfter(out, std::uniform_int_distribution<int>(25, 40)(rng), 2, SIGKILL, rng);
  job.join();
  ASSERT_EQ(result.exitCode, 1) << result.err;
  const auto failures = records(out, "failure");
  ASSERT_GE(failures.size(), 1u);
  EXPECT_EQ(failures[0]["detected_by"], "hang-timeout");
  const double detectedAt = failures[0]["failed_at"].get<double>() + failures[0]["detection_s"].get<double>();
  EXPECT_LT(detectedAt - stoppedAt, kHang + 5) << "the hang timeout plus a few seconds";
  // One clear final error naming where to go on from.
  const std::string err = result.err;
  const auto at = err.find("the last good checkpoint is ");
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_NE(err.find("more than --max-restarts 1"), std::string::npos) << err;
  std::string good = err.substr(at + std::string("the last good checkpoint is ").size());
  good = good.substr(0, good.find(' '));
  const std::string resumed = freshDir("recovery_hang_resumed");
  auto run = runCommand(tl::testing::mpirunPrefix(2) + TL_LAUNCH_BIN + " --resume " + good + " --output-dir " + resumed,
                        300, resumed);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_EQ(json::parse(slurp(resumed + "/summary.json"))["params_sha256"], referenceHash()) << "seed " << seed;
}

}  // namespace

namespace {

// A rank killed as the job shrinks in place (tl-ctl rescale 3 -> 2 at a boundary the kill
// follows at once): the copies were taken before the layout change, and the job still ends on
// the uninterrupted bits.
TEST_F(Recovery, KillAroundAnInPlaceShrink) {
  const unsigned seed = testSeed();
  std::cout << "seed " << seed << " (TL_TEST_SEED=" << seed << " repeats it)" << std::endl;
  std::mt19937 rng(seed);
  const std::string out = freshDir("recovery_shrink");
  tl::testing::CommandResult result;
  std::thread job([&] { result = runCommand(tlRun(3, 2, 10, out), 300, freshDir("recovery_shrink_cmd")); });
  ASSERT_TRUE(waitUntil([&] { return lastStep(out) >= 4 && int(rankProcesses(out).size()) == 3; }, 120));
  const int64_t at = lastStep(out) + std::uniform_int_distribution<int>(4, 8)(rng);
  tl::testing::CommandResult shrink;
  std::thread ctl([&] {
    shrink = runCommand(std::string(TL_CTL_BIN) + " rescale " + out + " --processes 2 --at-step " + std::to_string(at), 120,
                        freshDir("recovery_shrink_ctl"));
  });
  signalRankAfter(out, at, 3, SIGKILL, rng);
  ctl.join();
  job.join();
  std::cout << "tl-ctl rescale: exit " << shrink.exitCode << " " << shrink.out << shrink.err << std::endl;
  ASSERT_EQ(result.exitCode, 0) << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], referenceHash()) << "seed " << seed;
  EXPECT_EQ(summary["recovery"]["failures"], 1);
  EXPECT_EQ(records(out, "failure").size(), 1u);
}

}  // namespace

namespace {

// Kills inside the optimizer update: each update holds on for 1.5 s after it changed the parameters
// (TL_TEST_UPDATE_DELAY_MS, timing only), and a rank is killed 0.7 s after the lead recorded
// step k, i.e. inside step k+1's update. The survivors finish that update
// and write boundary k+1: no completed step is lost or recomputed. Then the lead itself is
// killed inside an update. The job ends on the bits of an uninterrupted run.
TEST_F(Recovery, KillsInsideTheOptimizerUpdateLoseNoStep) {
  constexpr int kShortSteps = 14;
  const std::string ref = freshDir("recovery_update_reference");
  auto plain = runCommand(
      tl::testing::mpirunPrefix(2) + TL_LAUNCH_BIN + jobFlags(kShortSteps) + " --output-dir " + ref,
      300, ref);
  ASSERT_EQ(plain.exitCode, 0) << plain.err;
  const std::string reference = json::parse(slurp(ref + "/summary.json"))["params_sha256"];

  const std::string out = freshDir("recovery_update");
  tl::testing::CommandResult result;
  std::thread job([&] {
    result = runCommand("env TL_TEST_UPDATE_DELAY_MS=1500 " + tlRun(3, 2, 20, out, "", kShortSteps),
                        300, freshDir("recovery_update_cmd"));
  });
  // Kills the lead or another rank of `processes` 0.7 s after a step past `after` appeared.
  auto killInUpdate = [&](int64_t after, int processes, bool lead) {
    EXPECT_TRUE(waitUntil(
        [&] { return lastStep(out) >= after && int(rankProcesses(out).size()) == processes; },
        120));
    const int64_t step = lastStep(out);
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    const pid_t leader = leadProcess(out);
    pid_t victim = 0;
    for (pid_t pid : rankProcesses(out)) {
      if ((pid == leader) == lead) victim = pid;
    }
    EXPECT_NE(victim, 0) << (lead ? "no lead found" : "no other rank found");
    EXPECT_EQ(lastStep(out), step) << "the update did not hold on";
    if (victim) ::kill(victim, SIGKILL);
    return step;
  };
  const int64_t first = killInUpdate(3, 3, /*lead=*/false);
  const int64_t second = killInUpdate(first + 4, 2, /*lead=*/true);
  job.join();
  ASSERT_EQ(result.exitCode, 0) << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], reference);
  EXPECT_EQ(summary["recovery"]["failures"], 2);
  const auto failures = records(out, "failure");
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0]["boundary_step"], first + 1)
      << "the update in flight was finished and kept";
  EXPECT_EQ(failures[1]["boundary_step"], second + 1)
      << "the update in flight was finished and kept";
  for (const auto& f : failures) EXPECT_EQ(f["steps_recomputed"], 0) << f.dump();
  tl::testing::recordConsistencyCells(
      "cnn (recovery test job, 14 steps)", "exact",
      {{"uninterrupted -np 2 (2,2)", reference},
       {"tl-run, killed inside the update (a rank, then the lead): 3 -> 2 -> 1",
        summary["params_sha256"]}});
}

}  // namespace

namespace {

// The processes an in-place grow of the job writing to `out` started (`tl-launch
// --joining-running-job`, whose command line names no folder): those descending from a
// process whose command line names `out` (tl-run, mpirun or the lead).
std::vector<pid_t> joiningProcesses(const std::string& out) {
  const auto cmdline = [](pid_t pid) {
    std::string c = slurp("/proc/" + std::to_string(pid) + "/cmdline");
    std::replace(c.begin(), c.end(), '\0', ' ');
    return c;
  };
  const auto parent = [](pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("PPid:", 0) == 0) return pid_t(std::stoi(line.substr(5)));
    }
    return pid_t(0);
  };
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = pid_t(std::stoi(name));
    if (cmdline(pid).find(std::string(TL_LAUNCH_BIN) + " --joining-running-job") != 0) continue;
    for (pid_t up = parent(pid); up > 1; up = parent(up)) {
      if (cmdline(up).find(out + " ") != std::string::npos) {
        found.push_back(pid);
        break;
      }
    }
  }
  return found;
}

// A rank killed during an in-place grow (tl-ctl rescale 2 -> 3): the new process is killed
// just after the grow applied, in its first step in the job (the updates are held on by
// TL_TEST_UPDATE_DELAY_MS), before it holds a boundary of its own; the members that were there
// write theirs, tl-run names it (the members' table follows the grow), and the job ends on the
// uninterrupted bits with no completed step recomputed.
TEST_F(Recovery, KillDuringAnInPlaceGrow) {
  const std::string out = freshDir("recovery_grow");
  tl::testing::CommandResult result;
  std::thread job([&] {
    result = runCommand("env TL_TEST_UPDATE_DELAY_MS=300 " + tlRun(2, 1, 20, out), 300,
                        freshDir("recovery_grow_cmd"));
  });
  ASSERT_TRUE(
      waitUntil([&] { return lastStep(out) >= 2 && int(rankProcesses(out).size()) == 2; }, 120));
  const int64_t at = lastStep(out) + 6;
  tl::testing::CommandResult grow;
  std::thread ctl([&] {
    grow = runCommand(std::string(TL_CTL_BIN) + " rescale " + out + " --processes 3 --at-step " +
                          std::to_string(at),
                      120, freshDir("recovery_grow_ctl"));
  });
  // The grow applies at the first boundary from step `at` on where its process is ready; the
  // lead records it right after the layout change, and the new process's first step follows.
  EXPECT_TRUE(waitUntil(
      [&] { return !records(out, "rescale").empty() && joiningProcesses(out).size() == 1u; }, 120));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  const auto joiners = joiningProcesses(out);
  ASSERT_EQ(joiners.size(), 1u);
  const pid_t joiner = joiners[0];
  const int64_t killedAfter = lastStep(out);
  ::kill(joiner, SIGKILL);
  ctl.join();
  job.join();
  EXPECT_EQ(grow.exitCode, 0) << grow.out << grow.err;
  ASSERT_EQ(result.exitCode, 0) << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], referenceHash());
  EXPECT_EQ(summary["recovery"]["failures"], 1);
  const auto rescales = records(out, "rescale");
  ASSERT_GE(rescales.size(), 1u);
  const std::string to = rescales[0]["to"];
  EXPECT_EQ(std::count(to.begin(), to.end(), ','), 2)
      << "the grow to 3 processes came first: " << to;
  const auto failures = records(out, "failure");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_GE(failures[0]["boundary_step"].get<int64_t>(), killedAfter);
  EXPECT_EQ(failures[0]["steps_recomputed"], 0);
  EXPECT_EQ(failures[0]["processes_before"], 3) << "the member table follows the grow";
  EXPECT_EQ(failures[0]["lost_ranks"], json::array({2})) << "the started process is named";
  EXPECT_EQ(failures[0]["processes_after"], 2);
}

}  // namespace
