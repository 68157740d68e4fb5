// In-place recovery end to end (tl-run's default, elastic/recovery/in_place.h): a rank is
// SIGKILLed and the survivors go on in their own processes over a communicator of the survivors,
// with nothing written to disk, no step lost or recomputed, and the bits of an uninterrupted run;
// tl-run and mpirun exit 0. When in place cannot work (the lead lost) the survivors write their
// copies and tl-run restarts the job, saying why in one line, and the bits are the same.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "tests/support/rank_processes.h"
#include "tests/support/run_command.h"

namespace {

using json = nlohmann::json;
using tl::testing::freshDir;
using tl::testing::lastStep;
using tl::testing::rankProcesses;
using tl::testing::records;
using tl::testing::runCommand;
using tl::testing::slurp;
using tl::testing::waitUntil;

std::string gDataDir;
constexpr int kSteps = 16;

std::string jobFlags() {
  return std::string(" --dataset cifar10 --data-dir ") + gDataDir +
         " --model cnn --logical-workers 4 --batch 8 --seed 5 --log-every 0 --steps " + std::to_string(kSteps);
}

std::string tlRun(int np, const std::string& out, const std::string& own = "", int hangTimeout = 20) {
  return std::string(TL_RUN_BIN) + " --np " + std::to_string(np) + " --max-restarts 2 --hang-timeout " +
         std::to_string(hangTimeout) + own +
         " --mpirun " + TL_MPIEXEC + " --mpirun-args --oversubscribe --launch " + TL_LAUNCH_BIN + " --" + jobFlags() +
         " --output-dir " + out;
}

// The job's lead: the rank process that holds its metrics.jsonl open (0: none found).
pid_t leadProcess(const std::string& out) {
  for (pid_t pid : rankProcesses(out)) {
    std::error_code ec;
    for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
      std::error_code linkError;
      if (std::filesystem::read_symlink(fd.path(), linkError).string() == out + "/metrics.jsonl") return pid;
    }
  }
  return 0;
}

// The job's processes by rank, as its lead reports them (tl-ctl status: "pids").
std::vector<pid_t> pidsByRank(const std::string& out) {
  auto status = runCommand(std::string(TL_CTL_BIN) + " status " + out + " --json", 60, freshDir("recovery_in_place_status"));
  EXPECT_EQ(status.exitCode, 0) << status.err;
  if (status.exitCode != 0) return {};
  std::vector<pid_t> pids;
  const json parsed = json::parse(status.out);
  for (const json& p : parsed.at("pids")) pids.push_back(pid_t(p.get<int64_t>()));
  return pids;
}

// tl-ctl rescale JOB --processes P, answered once applied.
void rescaleTo(const std::string& out, int processes) {
  auto r = runCommand(std::string(TL_CTL_BIN) + " rescale " + out + " --processes " + std::to_string(processes) +
                          " --timeout 200",
                      220, freshDir("recovery_in_place_rescale"));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
}

bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// Every step 1..kSteps logged exactly once.
void expectEveryStepOnce(const std::string& out) {
  std::multiset<int64_t> steps;
  for (const json& r : records(out, "step")) steps.insert(r.value("step", int64_t(-1)));
  for (int64_t s = 1; s <= kSteps; ++s) EXPECT_EQ(steps.count(s), 1u) << "step " << s << " in metrics.jsonl";
  EXPECT_EQ(steps.size(), size_t(kSteps));
}

// The end of a job that recovered in place once: tl-run exited 0 without a restart, the
// uninterrupted bits, one in-place failure leaving `processesAfter` processes, nothing recomputed,
// every step logged once. Returns the failure record.
json expectOneInPlaceRecovery(const tl::testing::CommandResult& result, const std::string& out,
                              const std::string& reference, int processesAfter) {
  EXPECT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err.find("restart"), std::string::npos) << result.err;
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
    std::string error;
    gDataDir = tl::testing::makeSyntheticCifar("recovery_in_place_data", 256, 32, 4, &error);
    ASSERT_EQ(error, "");
    const std::string ref = freshDir("recovery_in_place_reference");
    auto run = runCommand(tl::testing::mpirunPrefix(2) + TL_LAUNCH_BIN + jobFlags() + " --output-dir " + ref, 300, ref);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    reference() = json::parse(slurp(ref + "/summary.json"))["params_sha256"];
  }
  static std::string& reference() {
    static std::string hash;
    return hash;
  }

  // Kills `victims` non-lead ranks of the `processes` running `out`, `delayMs` after step `after`
  // was logged; returns {the step logged at the kill, the kill's Unix time}.
  static std::pair<int64_t, double> killNonLead(const std::string& out, int64_t after, int delayMs,
                                                size_t processes = 3, size_t victims = 1) {
    EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= after && rankProcesses(out).size() == processes; }, 120));
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
    std::cout << "SIGKILL to " << chosen.size() << " rank(s) after step " << logged << " (waited for " << step << ")"
              << std::endl;
    return {logged, at};
  }
};

// A rank killed inside the optimizer update (each update holds on 1.5 s after it changed the
// parameters: TL_TEST_UPDATE_DELAY_MS, timing only; the kill comes 0.7 s into the step, as in
// test_recovery, which leaves a loaded machine room for the step's compute and exchanges): the
// survivors finish the update, go on in place at that boundary, and nothing is written to disk.
TEST_F(InPlaceRecovery, KillInsideTheUpdateGoesOnInPlace) {
  const std::string out = freshDir("recovery_in_place_update");
  tl::testing::CommandResult result;
  std::thread job([&] {
    result = runCommand("env TL_TEST_UPDATE_DELAY_MS=1500 " + tlRun(3, out), 300, freshDir("recovery_in_place_update_cmd"));
  });
  const auto [killedAfter, killedAt] = killNonLead(out, 3, 700);
  // The next step after the one the update in flight completes.
  double nextStepAt = 0;
  waitUntil([&] { return lastStep(out) >= killedAfter + 2; }, 60);
  nextStepAt = tl::unixNow();
  job.join();
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err.find("restart"), std::string::npos) << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], reference());
  EXPECT_EQ(summary["recovery"]["failures"], 1);
  EXPECT_EQ(summary["recovery"]["recoveries"], 1);
  const auto failures = records(out, "failure");
  const auto recoveries = records(out, "recovery");
  ASSERT_EQ(failures.size(), 1u);
  ASSERT_EQ(recoveries.size(), 1u);
  EXPECT_EQ(failures[0]["mode"], "in-place") << failures[0].dump();
  EXPECT_EQ(recoveries[0]["mode"], "in-place") << recoveries[0].dump();
  EXPECT_EQ(failures[0]["boundary_step"], killedAfter + 1) << "the update in flight was finished and kept";
  EXPECT_EQ(failures[0]["steps_recomputed"], 0);
  EXPECT_EQ(failures[0]["processes_after"], 2);
  expectEveryStepOnce(out);
  // Nothing written to disk on this path.
  EXPECT_FALSE(std::filesystem::exists(out + "/recovery/history.json"));
  EXPECT_FALSE(std::filesystem::exists(out + "/recovery/state-0"));
  EXPECT_TRUE(!std::filesystem::exists(out + "/recovery/candidates") ||
              std::filesystem::is_empty(out + "/recovery/candidates"));
  const double detection = recoveries[0]["detected_at"].get<double>() - killedAt;
  std::cout << "kill -> detected " << detection << " s, agreement " << recoveries[0]["agreement_s"]
            << " s, first step after it " << recoveries[0]["first_step_s"] << " s; kill -> step "
            << killedAfter + 2 << " logged " << nextStepAt - killedAt << " s (the update in flight holds 1.5 s)"
            << std::endl;
  EXPECT_LT(detection, 0.5) << "the survivors knew of the loss within 0.5 s";
}

// A rank killed at a random moment of a step (no update delay: most likely in its exchanges):
// boundary k or k+1, whichever a survivor completed, and the same bits.
TEST_F(InPlaceRecovery, KillAtARandomMomentGoesOnInPlace) {
  std::mt19937 rng(std::random_device{}());
  const int delayMs = std::uniform_int_distribution<int>(0, 300)(rng);
  std::cout << "kill " << delayMs << " ms after step 4 was logged" << std::endl;
  const std::string out = freshDir("recovery_in_place_random");
  tl::testing::CommandResult result;
  std::thread job([&] { result = runCommand(tlRun(3, out), 300, freshDir("recovery_in_place_random_cmd")); });
  const auto [killedAfter, killedAt] = killNonLead(out, 4, delayMs);
  double nextStepAt = 0;
  waitUntil([&] { return lastStep(out) >= killedAfter + 1 && !records(out, "recovery").empty(); }, 60);
  nextStepAt = tl::unixNow();
  job.join();
  ASSERT_EQ(result.exitCode, 0) << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], reference());
  const auto failures = records(out, "failure");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0]["mode"], "in-place") << failures[0].dump();
  EXPECT_EQ(failures[0]["steps_recomputed"], 0);
  std::cout << "kill -> next step logged about " << nextStepAt - killedAt << " s" << std::endl;
}

// Two ranks of four killed at once: one agreement covers both, the two survivors go on in place.
TEST_F(InPlaceRecovery, TwoRanksKilledAtOnceGoOnInPlace) {
  const std::string out = freshDir("recovery_in_place_two");
  tl::testing::CommandResult result;
  std::thread job([&] {
    result = runCommand("env TL_TEST_UPDATE_DELAY_MS=300 " + tlRun(4, out), 300, freshDir("recovery_in_place_two_cmd"));
  });
  killNonLead(out, 3, 100, 4, 2);
  job.join();
  ASSERT_EQ(result.exitCode, 0) << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], reference());
  const auto failures = records(out, "failure");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0]["mode"], "in-place") << failures[0].dump();
  EXPECT_EQ(failures[0]["lost_ranks"].size(), 2u) << failures[0].dump();
  EXPECT_EQ(failures[0]["processes_after"], 2);
  EXPECT_EQ(failures[0]["steps_recomputed"], 0);
  expectEveryStepOnce(out);
}

// The lead killed: in place does not cover it yet, so the survivors write their copies, tl-run
// says why in one line and restarts the job from them; the bits are the same.
TEST_F(InPlaceRecovery, LeadLostFallsBackToARestart) {
  const std::string out = freshDir("recovery_in_place_lead");
  tl::testing::CommandResult result;
  std::thread job([&] { result = runCommand(tlRun(3, out), 300, freshDir("recovery_in_place_lead_cmd")); });
  EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= 4 && rankProcesses(out).size() == 3u; }, 120));
  const pid_t lead = leadProcess(out);
  ASSERT_NE(lead, 0);
  ::kill(lead, SIGKILL);
  job.join();
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.err.find("tl-run: the survivors could not go on in place (the lead (rank 0) was lost"),
            std::string::npos)
      << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], reference());
  const auto failures = records(out, "failure");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0]["mode"], "restart") << failures[0].dump();
  EXPECT_EQ(failures[0]["steps_recomputed"], 0);
}

// A job that grew in place (its third process started by MPI_Comm_spawn and merged into the
// job's communicator) loses that new process: the survivors' communicator is made over the merged
// one, and the two original processes go on in place with the same bits.
TEST_F(InPlaceRecovery, GrownJobLosesItsNewProcessInPlace) {
  const std::string out = freshDir("recovery_in_place_grown");
  tl::testing::CommandResult result;
  std::thread job([&] {
    result = runCommand("env TL_TEST_UPDATE_DELAY_MS=1500 " + tlRun(2, out, " --grow-back off"), 300,
                        freshDir("recovery_in_place_grown_cmd"));
  });
  EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= 2 && rankProcesses(out).size() == 2u; }, 120));
  rescaleTo(out, 3);
  const std::vector<pid_t> pids = pidsByRank(out);
  ASSERT_EQ(pids.size(), 3u);
  const int64_t grownAt = lastStep(out);
  ::kill(pids[2], SIGKILL);
  std::cout << "grown to 3 processes, the started one killed after step " << grownAt << std::endl;
  job.join();
  expectOneInPlaceRecovery(result, out, reference(), 2);
  EXPECT_EQ(json::parse(slurp(out + "/summary.json"))["inplace_rescales"], 1);
}

// A process that left the job by an in-place shrink waits in MPI_Finalize for the others; when a
// member is then lost and the survivors go on in place (and end with _exit), it must still end,
// and tl-run with it.
TEST_F(InPlaceRecovery, ShrunkJobLosesARankAndEveryProcessEnds) {
  const std::string out = freshDir("recovery_in_place_shrunk");
  tl::testing::CommandResult result;
  std::thread job([&] {
    result = runCommand("env TL_TEST_UPDATE_DELAY_MS=700 " + tlRun(3, out, " --grow-back off"), 150,
                        freshDir("recovery_in_place_shrunk_cmd"));
  });
  EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= 2 && rankProcesses(out).size() == 3u; }, 120));
  const std::vector<pid_t> before = pidsByRank(out);
  ASSERT_EQ(before.size(), 3u);
  rescaleTo(out, 2);  // rank 2 leaves
  const std::vector<pid_t> after = pidsByRank(out);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_TRUE(running(before[2])) << "the process that left waits for the job's end";
  ::kill(after[1], SIGKILL);
  job.join();
  EXPECT_FALSE(running(before[2])) << "the process that left ended with the job";
  expectOneInPlaceRecovery(result, out, reference(), 1);
}

// A rank stopped (SIGSTOP: a hang, not a death): the survivors' collective times out after
// --hang-timeout and names it; it is a stopped process of their host, so they end it with
// SIGKILL and go on in place, as after a kill, with the same bits.
TEST_F(InPlaceRecovery, StoppedRankIsEndedAndTheOthersGoOnInPlace) {
  const std::string out = freshDir("recovery_in_place_stopped");
  tl::testing::CommandResult result;
  std::thread job([&] {
    result = runCommand("env TL_TEST_UPDATE_DELAY_MS=300 " + tlRun(3, out, "", 5), 200,
                        freshDir("recovery_in_place_stopped_cmd"));
  });
  EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= 3 && rankProcesses(out).size() == 3u; }, 120));
  const std::vector<pid_t> pids = pidsByRank(out);
  ASSERT_EQ(pids.size(), 3u);
  ::kill(pids[1], SIGSTOP);
  const double stoppedAt = tl::unixNow();
  job.join();
  EXPECT_FALSE(running(pids[1])) << "the stopped rank was ended";
  const json failure = expectOneInPlaceRecovery(result, out, reference(), 2);
  EXPECT_EQ(failure["detected_by"], "hang-timeout") << failure.dump();
  EXPECT_EQ(failure["lost_ranks"], json::array({1})) << failure.dump();
  const auto recoveries = records(out, "recovery");
  ASSERT_EQ(recoveries.size(), 1u);
  ASSERT_TRUE(recoveries[0].contains("detected_at")) << recoveries[0].dump();
  std::cout << "SIGSTOP -> detected (hang timeout 5 s) " << recoveries[0]["detected_at"].get<double>() - stoppedAt
            << " s" << std::endl;
}

// After an in-place recovery tl-run grows the job back to --np in place (over its control
// channel), and a second loss after the grow-back is survived in place too; the same bits.
TEST_F(InPlaceRecovery, GrowsBackThenSurvivesASecondLoss) {
  const std::string out = freshDir("recovery_in_place_grow_back");
  tl::testing::CommandResult result;
  std::thread job([&] {
    result = runCommand("env TL_TEST_UPDATE_DELAY_MS=2000 " + tlRun(3, out), 300, freshDir("recovery_in_place_grow_back_cmd"));
  });
  EXPECT_TRUE(waitUntil([&] { return lastStep(out) >= 2 && rankProcesses(out).size() == 3u; }, 120));
  std::vector<pid_t> pids = pidsByRank(out);
  ASSERT_EQ(pids.size(), 3u);
  ::kill(pids[2], SIGKILL);
  // The grow-back: a rescale from 2 processes to 3 after the recovery.
  const bool grew = waitUntil([&] { return !records(out, "rescale").empty(); }, 120);
  EXPECT_TRUE(grew) << "no grow-back before the job's end";
  if (grew) {
    pids = pidsByRank(out);
    EXPECT_EQ(pids.size(), 3u);
    if (pids.size() == 3u) ::kill(pids[1], SIGKILL);  // a second loss, of an original process
  }
  job.join();
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.err.find("tl-run: growing back to 3 processes in place: rescaled from 2 processes"),
            std::string::npos)
      << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], reference());
  const auto failures = records(out, "failure");
  ASSERT_EQ(failures.size(), grew ? 2u : 1u);
  for (const json& f : failures) {
    EXPECT_EQ(f["mode"], "in-place") << f.dump();
    EXPECT_EQ(f["steps_recomputed"], 0);
  }
  const auto rescales = records(out, "rescale");
  ASSERT_FALSE(rescales.empty());
  EXPECT_EQ(rescales[0]["from"], "2,2") << rescales[0].dump();
  expectEveryStepOnce(out);
}

}  // namespace
