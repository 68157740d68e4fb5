// In-place recovery end to end (tl-run's default, elastic/recovery/in_place.h): a rank is
// SIGKILLed and the survivors go on in their own processes over a communicator of the survivors,
// with nothing written to disk, no step lost or recomputed, and the bits of an uninterrupted run;
// tl-run and mpirun exit 0. The lead's loss, a loss during a grow and one during the agreement:
// test_recovery_in_place_lead.cpp.
#include <random>

#include "tests/tools/run/in_place_fixture.h"

namespace {

using namespace tl::testing::in_place;

// A rank killed inside the optimizer update (each update holds on 1.5 s after it changed the
// parameters: TL_TEST_UPDATE_DELAY_MS, timing only; the kill comes 0.7 s into the step, as in
// test_recovery, which leaves a loaded machine room for the step's compute and exchanges): the
// survivors finish the update, go on in place at that boundary, and nothing is written to disk.
TEST_F(InPlaceRecovery, KillInsideTheUpdateGoesOnInPlace) {
  const std::string out = freshDir("recovery_in_place_update");
  JobThread job("env TL_TEST_UPDATE_DELAY_MS=1500 " + tlRun(3, out), 300,
                "recovery_in_place_update_cmd");
  const auto [killedAfter, killedAt] = killNonLead(out, 3, 700);
  // The next step after the one the update in flight completes.
  double nextStepAt = 0;
  waitUntil([&] { return lastStep(out) >= killedAfter + 2; }, 60);
  nextStepAt = tl::unixNow();
  const tl::testing::CommandResult& result = job.join();
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
  EXPECT_EQ(failures[0]["boundary_step"], killedAfter + 1)
      << "the update in flight was finished and kept";
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
            << killedAfter + 2 << " logged " << nextStepAt - killedAt
            << " s (the update in flight holds 1.5 s)" << std::endl;
  EXPECT_LT(detection, 0.5) << "the survivors knew of the loss within 0.5 s";
}

// A rank killed at a random moment of a step (no update delay: most likely in its exchanges):
// boundary k or k+1, whichever a survivor completed, and the same bits.
TEST_F(InPlaceRecovery, KillAtARandomMomentGoesOnInPlace) {
  std::mt19937 rng(std::random_device{}());
  const int delayMs = std::uniform_int_distribution<int>(0, 300)(rng);
  std::cout << "kill " << delayMs << " ms after step 4 was logged" << std::endl;
  const std::string out = freshDir("recovery_in_place_random");
  JobThread job(tlRun(3, out), 300, "recovery_in_place_random_cmd");
  const auto [killedAfter, killedAt] = killNonLead(out, 4, delayMs);
  double nextStepAt = 0;
  waitUntil([&] { return lastStep(out) >= killedAfter + 1 && !records(out, "recovery").empty(); },
            60);
  nextStepAt = tl::unixNow();
  const tl::testing::CommandResult& result = job.join();
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
  JobThread job("env TL_TEST_UPDATE_DELAY_MS=300 " + tlRun(4, out), 300,
                "recovery_in_place_two_cmd");
  killNonLead(out, 3, 100, 4, 2);
  const tl::testing::CommandResult& result = job.join();
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

// A job that grew in place (its third process started by MPI_Comm_spawn and merged into the
// job's communicator) loses that new process: the survivors' communicator is made over the merged
// one, and the two original processes go on in place with the same bits.
TEST_F(InPlaceRecovery, GrownJobLosesItsNewProcessInPlace) {
  const std::string out = freshDir("recovery_in_place_grown");
  JobThread job("env TL_TEST_UPDATE_DELAY_MS=1500 " + tlRun(2, out, " --grow-back off"), 300,
                "recovery_in_place_grown_cmd");
  EXPECT_TRUE(waitForRanks(out, 2, 2));
  rescaleTo(out, 3);
  const std::vector<pid_t> pids = pidsByRank(out);
  ASSERT_EQ(pids.size(), 3u);
  const int64_t grownAt = lastStep(out);
  ::kill(pids[2], SIGKILL);
  std::cout << "grown to 3 processes, the started one killed after step " << grownAt << std::endl;
  const tl::testing::CommandResult& result = job.join();
  expectOneInPlaceRecovery(result, out, reference(), 2);
  EXPECT_EQ(json::parse(slurp(out + "/summary.json"))["inplace_rescales"], 1);
}

// A process that left the job by an in-place shrink waits in MPI_Finalize for the others; when a
// member is then lost and the survivors go on in place (and end with _exit), it must still end,
// and tl-run with it.
TEST_F(InPlaceRecovery, ShrunkJobLosesARankAndEveryProcessEnds) {
  const std::string out = freshDir("recovery_in_place_shrunk");
  JobThread job("env TL_TEST_UPDATE_DELAY_MS=700 " + tlRun(3, out, " --grow-back off"), 150,
                "recovery_in_place_shrunk_cmd");
  EXPECT_TRUE(waitForRanks(out, 2, 3));
  const std::vector<pid_t> before = pidsByRank(out);
  ASSERT_EQ(before.size(), 3u);
  rescaleTo(out, 2);  // rank 2 leaves
  const std::vector<pid_t> after = pidsByRank(out);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_TRUE(running(before[2])) << "the process that left waits for the job's end";
  ::kill(after[1], SIGKILL);
  const tl::testing::CommandResult& result = job.join();
  EXPECT_FALSE(running(before[2])) << "the process that left ended with the job";
  expectOneInPlaceRecovery(result, out, reference(), 1);
}

// A rank stopped (SIGSTOP: a hang, not a death): the survivors' collective times out after
// --hang-timeout and names it; it is a stopped process of their host, so they end it with
// SIGKILL and go on in place, as after a kill, with the same bits.
TEST_F(InPlaceRecovery, StoppedRankIsEndedAndTheOthersGoOnInPlace) {
  const std::string out = freshDir("recovery_in_place_stopped");
  JobThread job("env TL_TEST_UPDATE_DELAY_MS=300 " + tlRun(3, out, "", 5), 200,
                "recovery_in_place_stopped_cmd");
  EXPECT_TRUE(waitForRanks(out, 3, 3));
  const std::vector<pid_t> pids = pidsByRank(out);
  ASSERT_EQ(pids.size(), 3u);
  ::kill(pids[1], SIGSTOP);
  const double stoppedAt = tl::unixNow();
  const tl::testing::CommandResult& result = job.join();
  EXPECT_FALSE(running(pids[1])) << "the stopped rank was ended";
  const json failure = expectOneInPlaceRecovery(result, out, reference(), 2);
  EXPECT_EQ(failure["detected_by"], "hang-timeout") << failure.dump();
  EXPECT_EQ(failure["lost_ranks"], json::array({1})) << failure.dump();
  const auto recoveries = records(out, "recovery");
  ASSERT_EQ(recoveries.size(), 1u);
  ASSERT_TRUE(recoveries[0].contains("detected_at")) << recoveries[0].dump();
  std::cout << "SIGSTOP -> detected (hang timeout 5 s) "
            << recoveries[0]["detected_at"].get<double>() - stoppedAt << " s" << std::endl;
}

// After an in-place recovery tl-run grows the job back to --np in place (over its control
// channel), and a second loss after the grow-back is survived in place too; the same bits.
TEST_F(InPlaceRecovery, GrowsBackThenSurvivesASecondLoss) {
  const std::string out = freshDir("recovery_in_place_grow_back");
  JobThread job("env TL_TEST_UPDATE_DELAY_MS=2000 " + tlRun(3, out), 300,
                "recovery_in_place_grow_back_cmd");
  EXPECT_TRUE(waitForRanks(out, 2, 3));
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
  const tl::testing::CommandResult& result = job.join();
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(
      result.err.find("tl-run: growing back to 3 processes in place: rescaled from 2 processes"),
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

#if TL_OPEN_MPI_5
// Open MPI 5: tl-run refuses in place with one line that says why and what to use, before it
// starts anything; its default there is the restart path (test_recovery).
TEST(InPlaceOnOpenMpi5, RefusedWithOneClearError) {
  const std::string out = freshDir("recovery_in_place_ompi5");
  const auto r =
      runCommand(std::string(TL_RUN_BIN) + " --np 2 --recovery in-place --launch " + TL_LAUNCH_BIN +
                     " -- --dataset cifar10 --data-dir " + out + " --output-dir " + out + "/job",
                 60, out);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_EQ(
      tl::testing::countOccurrences(r.err, "--recovery in-place: not available with Open MPI 5"), 1)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(out + "/job/recovery")) << "nothing was started";
}
#endif

}  // namespace
