// In-place recovery around the lead and the other members' moves (elastic/recovery/in_place.h):
// - the lead lost: the lowest surviving rank takes over its duties (metrics.jsonl without a gap
//   or duplicate, the control channel with the same key, summary.json), tl-run grows the job
//   back through it, and the bits are those of an uninterrupted run;
// - a member lost while the job grows in place: the grow is cancelled and the survivors go on;
// - a second member lost during the survivors' agreement: in place cannot work, so they write
//   their copies and tl-run restarts the job from them, saying why, with the same bits.
#include <algorithm>
#include <cstdio>

#include "tests/tools/run/in_place_fixture.h"

namespace {

using namespace tl::testing::in_place;

// The pid control.json names (the process that serves the job's control channel), 0 if none.
int64_t controlPid(const std::string& out) {
  const json c = json::parse(slurp(out + "/control.json"), nullptr, false);
  return c.is_object() ? c.value("pid", int64_t(0)) : 0;
}

// The parent of `pid` (0 if it is gone).
pid_t parentOf(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  char state = 0;
  int ppid = 0;
  return std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 ? pid_t(ppid) : 0;
}

// tl-launch processes started by MPI_Comm_spawn for the job whose ranks are `ranks`: children
// of the same mpirun that are not among them (a started process's command line does not name the
// job's folder, so rankProcesses does not see it).
std::vector<pid_t> startedProcesses(const std::vector<pid_t>& ranks) {
  std::vector<pid_t> found;
  const pid_t mpirun = ranks.empty() ? 0 : parentOf(ranks[0]);
  if (mpirun <= 1) return found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = pid_t(std::stoi(name));
    const std::string cmdline = slurp(entry.path().string() + "/cmdline");
    if (cmdline.substr(0, cmdline.find('\0')) != TL_LAUNCH_BIN || parentOf(pid) != mpirun) continue;
    if (std::find(ranks.begin(), ranks.end(), pid) == ranks.end()) found.push_back(pid);
  }
  return found;
}

// The lead SIGKILLed in the middle of a step. Rank 1 becomes the lead of the two survivors: it
// holds metrics.jsonl and serves tl-ctl with the job's key; tl-run's grow-back goes through it
// (MPI_Comm_spawn from the survivors' communicator), and the job ends on the uninterrupted bits
// with every step logged once.
TEST_F(InPlaceRecovery, LeadLostGoesOnInPlace) {
  const std::string out = freshDir("recovery_in_place_lead");
  JobThread job("env TL_TEST_UPDATE_DELAY_MS=2000 " + tlRun(3, out), 300,
                "recovery_in_place_lead_cmd");
  ASSERT_TRUE(waitForRanks(out, 2, 3));
  const std::vector<pid_t> before = pidsByRank(out);
  ASSERT_EQ(before.size(), 3u);
  const pid_t lead = leadProcess(out);
  ASSERT_EQ(lead, before[0]);
  EXPECT_EQ(controlPid(out), int64_t(lead));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // inside the next step's update
  const int64_t killedAfter = lastStep(out);
  const double killedAt = tl::unixNow();
  ::kill(lead, SIGKILL);
  std::cout << "SIGKILL to the lead after step " << killedAfter << std::endl;

  // The survivors' rank 0 (the old rank 1) has taken over: it logs, and tl-ctl reaches it with
  // the same key file through the republished control.json.
  EXPECT_TRUE(waitUntil([&] { return !records(out, "recovery").empty(); }, 60));
  const double recoveredAt = tl::unixNow();
  EXPECT_TRUE(waitUntil([&] { return leadProcess(out) == before[1]; }, 10))
      << "metrics.jsonl held by " << leadProcess(out);
  EXPECT_TRUE(waitUntil([&] { return controlPid(out) == int64_t(before[1]); }, 10));
  const std::vector<pid_t> survivors = pidsByRank(out);
  ASSERT_FALSE(survivors.empty());
  EXPECT_EQ(survivors[0], before[1]) << "the lowest surviving rank leads";

  // tl-run grows the job back to 3 processes through the new lead.
  EXPECT_TRUE(waitUntil([&] { return !records(out, "rescale").empty(); }, 120)) << "no grow-back";
  const tl::testing::CommandResult& result = job.join();
  const json failure = expectOneInPlaceRecovery(result, out, reference(), 2);
  EXPECT_EQ(failure["lost_ranks"], json::array({0})) << failure.dump();
  EXPECT_NE(
      result.err.find("tl-run: growing back to 3 processes in place: rescaled from 2 processes"),
      std::string::npos)
      << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["processes"], 3) << "summary.json written by the new lead after the grow-back";
  EXPECT_EQ(summary["recovery"]["recoveries"], 1);
  const auto recoveries = records(out, "recovery");
  ASSERT_EQ(recoveries.size(), 1u);
  std::cout << "kill -> detected " << recoveries[0]["detected_at"].get<double>() - killedAt
            << " s, agreement " << recoveries[0]["agreement_s"] << " s, first step after it "
            << recoveries[0]["first_step_s"] << " s; kill -> recovery record seen "
            << recoveredAt - killedAt << " s" << std::endl;
}

// A rank killed while the job grows in place (tl-ctl rescale 3 -> 4: the new process is being
// started): the grow is cancelled and answered as failed, its process ends, and the survivors
// go on in place with the same bits.
TEST_F(InPlaceRecovery, LossDuringAGrowGoesOnInPlace) {
  const std::string out = freshDir("recovery_in_place_during_grow");
  JobThread job("env TL_TEST_UPDATE_DELAY_MS=1500 " + tlRun(3, out, " --grow-back off"), 300,
                "recovery_in_place_during_grow_cmd");
  ASSERT_TRUE(waitForRanks(out, 2, 3));
  const std::vector<pid_t> pids = pidsByRank(out);
  ASSERT_EQ(pids.size(), 3u);
  tl::testing::CommandResult grow;
  std::thread rescale([&] {
    grow = runCommand(std::string(TL_CTL_BIN) + " rescale " + out + " --processes 4 --timeout 200",
                      220, freshDir("recovery_in_place_during_grow_rescale"));
  });
  // The started process exists; it joins at the first boundary after its start-up (1.5 s or
  // more), and the kill comes before.
  std::vector<pid_t> started;
  EXPECT_TRUE(waitUntil([&] { return !(started = startedProcesses(pids)).empty(); }, 60))
      << "the grow's process never appeared";
  const int64_t killedAfter = lastStep(out);
  ::kill(pids[2], SIGKILL);
  std::cout << "SIGKILL to rank 2 after step " << killedAfter << " while the grow's process starts"
            << std::endl;
  rescale.join();
  const tl::testing::CommandResult& result = job.join();
  EXPECT_NE(grow.exitCode, 0) << grow.out << grow.err;
  EXPECT_NE((grow.out + grow.err).find("members of the job were lost"), std::string::npos)
      << grow.out << grow.err;
  expectOneInPlaceRecovery(result, out, reference(), 2);
  EXPECT_EQ(json::parse(slurp(out + "/summary.json"))["inplace_rescales"], 0);
  EXPECT_TRUE(rankProcesses(out).empty()) << "a rank of the job outlived it";
  for (pid_t p : started)
    EXPECT_FALSE(running(p)) << "the grow's process " << p << " outlived the job";
}

// Rank 3 of 4 killed, then rank 2 while the survivors agree (TL_TEST_AGREEMENT_DELAY_MS holds the
// agreement open 3 s: timing only). The survivors cannot agree, write their copies and exit;
// tl-run says why and restarts the job from them, which ends on the same bits, nothing lost.
TEST_F(InPlaceRecovery, LossDuringTheAgreementFallsBackToARestart) {
  const std::string out = freshDir("recovery_in_place_agreement");
  JobThread job("env TL_TEST_UPDATE_DELAY_MS=300 TL_TEST_AGREEMENT_DELAY_MS=3000 " +
                    tlRun(4, out, " --grow-back off"),
                300, "recovery_in_place_agreement_cmd");
  ASSERT_TRUE(waitForRanks(out, 3, 4));
  const std::vector<pid_t> pids = pidsByRank(out);
  ASSERT_EQ(pids.size(), 4u);
  ::kill(pids[3], SIGKILL);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(1200));  // past the 0.2 s that gathers losses
  ::kill(pids[2], SIGKILL);
  const tl::testing::CommandResult& result = job.join();
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.err.find("tl-run: the survivors could not go on in place ("), std::string::npos)
      << result.err;
  const json summary = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(summary["params_sha256"], reference());
  const auto failures = records(out, "failure");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0]["mode"], "restart") << failures[0].dump();
  EXPECT_EQ(failures[0]["steps_recomputed"], 0);
  expectEveryStepOnce(out);
}

}  // namespace
