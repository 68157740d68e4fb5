// End-to-end: --placement auto under real mpirun on emulated devices of different speed. The
// first plan and a re-plan after a mid-run slowdown move ESTs (once each, no flapping) and the
// job keeps the DDP run's params_sha256; a memory limit that binds keeps the ESTs where they
// are; tl-ctl plan shows the plan; bad emulation flags are refused with one clear message.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/run_command.h"

namespace {

using nlohmann::json;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gDataDir;
std::string gReferenceSha;

// N = 4 logical workers, CNN with BatchNorm and dropout, 36 steps of batch 8.
std::string jobFlags(int steps) {
  return std::string(" --model cnn --dropout 0.3 --dataset cifar10 --data-dir ") + gDataDir + " --batch 8 --steps " +
         std::to_string(steps) + " --seed 5 --logical-workers 4 --log-every 0";
}

std::vector<json> records(const std::string& out, const std::string& type) {
  std::vector<json> found;
  std::ifstream in(out + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"" + type + "\"") != std::string::npos) found.push_back(json::parse(line));
  }
  return found;
}

class AutoPlacement : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    gDataDir = tl::testing::makeSyntheticCifar("auto_placement_data", 128, 16, 6, &error);
    ASSERT_TRUE(error.empty()) << error;
    const std::string dir = freshDir("auto_placement_reference");
    auto r = runCommand(tl::testing::mpirunPrefix(4) + TL_LAUNCH_BIN + jobFlags(36) + " --output-dir " + dir +
                            "/out --control-bind none",
                        300, dir);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    gReferenceSha = json::parse(slurp(dir + "/out/summary.json"))["params_sha256"];
  }
};

TEST_F(AutoPlacement, PlansThenReplansOnceAfterASlowdownAndKeepsTheDdpBits) {
  ASSERT_FALSE(gReferenceSha.empty());
  const std::string dir = freshDir("auto_placement_replan");
  const std::string out = dir + "/out";
  // Process 1 is 4x slower, then (after step 18) process 0 is: 2,2 -> 3,1 -> 1,3.
  const std::string command = "(timeout -k 5 200 " + tl::testing::mpirunPrefix(2) + TL_LAUNCH_BIN + jobFlags(36) +
                              " --placement auto --replan-window 3 --replan-hold 6 --replan-min-gain 0.2"
                              " --emulate-slowdown 1,4 --emulate-slowdown-at 18:4,1 --output-dir " +
                              out + " >" + dir + "/job.out 2>" + dir + "/job.err; echo $? >" + dir + "/rc) &";
  ASSERT_EQ(std::system(command.c_str()), 0);
  // While it runs, tl-ctl plan shows the lead's last plan.
  std::string shown;
  for (int i = 0; i < 2000 && !std::filesystem::exists(dir + "/rc"); ++i) {
    if (std::filesystem::exists(out + "/control.json")) {
      auto r = runCommand(std::string(TL_CTL_BIN) + " plan " + out, 30, dir);
      if (r.exitCode == 0 && r.out.find("decision") != std::string::npos) {
        shown = r.out;
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (int i = 0; i < 4000 && !std::filesystem::exists(dir + "/rc"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string log = slurp(dir + "/job.out") + slurp(dir + "/job.err");
  ASSERT_EQ(slurp(dir + "/rc"), "0\n") << log;
  EXPECT_NE(shown.find("seconds per est"), std::string::npos) << shown;
  EXPECT_NE(shown.find("plan"), std::string::npos) << shown;

  const json s = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(s["params_sha256"], gReferenceSha) << log;
  EXPECT_EQ(s["emulated"], true);
  EXPECT_EQ(s["placement_auto"], true);
  EXPECT_EQ(s["placement_replans"], 2);
  EXPECT_EQ(s["placement"], "1,3");

  const auto moves = records(out, "rescale");
  ASSERT_EQ(moves.size(), 2u) << log;
  EXPECT_EQ(moves[0]["by"], "placement auto");
  EXPECT_EQ(moves[0]["from"], "2,2");
  EXPECT_EQ(moves[0]["to"], "3,1");
  // The second window after the warm-up step (the first asks the next to confirm).
  EXPECT_LE(moves[0]["step"].get<int>(), 7);
  EXPECT_EQ(moves[1]["from"], "3,1");
  EXPECT_EQ(moves[1]["to"], "1,3");
  EXPECT_GT(moves[1]["step"].get<int>(), 18);
  EXPECT_LE(moves[1]["step"].get<int>(), 29);
  // Every plan is recorded; the slow process measured slower than the fast one.
  const auto plans = records(out, "plan");
  ASSERT_GE(plans.size(), 4u);
  const auto t = plans.front()["seconds_per_est"];
  EXPECT_GT(t[1].get<double>(), 2 * t[0].get<double>());
  int moveDecisions = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i]["decision"] != "move") continue;
    ++moveDecisions;
    // A move follows a window that planned the same and asked for confirmation.
    ASSERT_GT(i, 0u);
    EXPECT_EQ(plans[i - 1]["decision"].get<std::string>().rfind("confirm", 0), 0u) << plans[i - 1].dump();
    EXPECT_EQ(plans[i - 1]["plan"], plans[i]["plan"]);
  }
  EXPECT_EQ(moveDecisions, 2);
}

TEST_F(AutoPlacement, AMemoryLimitThatBindsKeepsTheEsts) {
  const std::string dir = freshDir("auto_placement_memory");
  const std::string out = dir + "/out";
  // Process 0 is 4x faster but has room for 2 ESTs (each holds a 98 KB batch): 2,2 is the plan.
  auto r = runCommand(tl::testing::mpirunPrefix(2) + TL_LAUNCH_BIN + jobFlags(12) +
                          " --placement auto --replan-window 3 --emulate-slowdown 1,4"
                          " --emulate-device-memory 0.25,10 --control-bind none --output-dir " + out,
                      200, dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(records(out, "rescale").empty());
  const auto plans = records(out, "plan");
  ASSERT_FALSE(plans.empty());
  EXPECT_EQ(plans.front()["plan"], "2,2");
  EXPECT_GT(plans.front()["bytes_per_est"][0].get<double>(), 98304);
  const json s = json::parse(slurp(out + "/summary.json"));
  EXPECT_EQ(s["placement_replans"], 0);
  EXPECT_EQ(s["emulation"]["device_memory_mb"][0], 0.25);
}

TEST_F(AutoPlacement, BadEmulationFlagsAreRefused) {
  const std::string dir = freshDir("auto_placement_bad");
  auto check = [&](const std::string& flags) {
    return runCommand(std::string(TL_LAUNCH_BIN) + jobFlags(4) + " --check --check-processes 2 " + flags, 60, dir);
  };
  auto r = check("--placement auto --emulate-slowdown 1,2,3");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--emulate-slowdown: 3 factor(s) for 2 processes"), std::string::npos) << r.err;
  r = check("--emulate-slowdown 1,0.5");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--emulate-slowdown: every value must be between 1 and 1000, got 0.5"), std::string::npos)
      << r.err;
  r = check("--emulate-slowdown-at 1,2");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--emulate-slowdown-at: expected STEP:F,F,.."), std::string::npos) << r.err;
  r = check("--emulate-device-memory 1,2,3");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--emulate-device-memory: 3 values for 2 processes"), std::string::npos) << r.err;
  r = check("--placement auto --emulate-slowdown 1,2 --emulate-device-memory 4");
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

}  // namespace
