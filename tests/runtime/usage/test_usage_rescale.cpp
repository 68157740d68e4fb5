// End-to-end: resource recording through in-place rescales (tl-ctl) under real mpirun. A job of
// 3 processes shrinks to 2 and grows to 4; after each change its traffic per step is the ring
// allreduce's for the new number of processes P (fp32 reduction: 2(P-1)/P x the gradient bytes
// each way, plus the few bytes of the step's statistics), which it only is if the rebuilt
// communicators are counted. The process that left and the two a grow started have their own
// figures in summary.json and their own windows in metrics.jsonl.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/models/model.h"
#include "tests/support/background_job.h"

namespace {

using nlohmann::json;
using tl::testing::BackgroundJob;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

// Far enough from the start that the requests arrive first, even on an idle machine; two of
// the lead's 10-step windows between the changes.
constexpr int64_t kShrinkAt = 30;
constexpr int64_t kGrowFrom = 60;  // or later: when the started processes are ready

std::vector<json> usageWindows(const std::string& out) {
  std::vector<json> windows;
  std::ifstream in(out + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = json::parse(line);
    if (j.value("type", "") == "usage") windows.push_back(j);
  }
  return windows;
}

double gradientBytes() {
  tl::models::ModelConfig cnn;
  cnn.arch = "cnn";
  return 4.0 * double(tl::models::countParameters(*tl::models::createModel(cnn)));
}

// A ring allreduce's bytes per member for P processes, plus what the step's statistics and the
// controller's per-step broadcast add (small).
void expectRingTraffic(const json& figures, int processes, const std::string& what) {
  const double expected = 2.0 * double(processes - 1) / double(processes) * gradientBytes();
  for (const char* dir : {"tx_bytes_per_step", "rx_bytes_per_step"}) {
    const double perStep = figures.at(dir).get<double>();
    EXPECT_GE(perStep, expected) << what << " " << dir << " (P = " << processes << ")";
    EXPECT_LE(perStep, expected + 4096) << what << " " << dir << " (P = " << processes << ")";
  }
}

TEST(UsageRescale, TrafficAfterAShrinkAndAGrowFollowsTheNewProcessCountAndEveryProcessReports) {
  std::string error;
  const std::string data = tl::testing::makeSyntheticCifar("usage_rescale_data", 256, 16, 1, &error);
  ASSERT_EQ(error, "");
  const std::string dir = freshDir("usage_rescale");
  const std::string out = dir + "/out";
  BackgroundJob job(3,
                    " --dataset cifar10 --data-dir " + data +
                        " --model cnn --batch 8 --steps 3000 --logical-workers 4 --reduction fp32 --workers 0"
                        " --log-every 0 --output-dir " + out,
                    dir);
  ASSERT_TRUE(job.waitForControl(out)) << job.log();
  // Both queued at once: the grow's processes start once the shrink is done.
  const auto results = tl::testing::queueCommands(
      {"rescale " + out + " --processes 2 --at-step " + std::to_string(kShrinkAt),
       "rescale " + out + " --processes 4 --at-step " + std::to_string(kGrowFrom)},
      out, dir);
  for (const auto& r : results) ASSERT_EQ(r.exitCode, 0) << r.out << r.err << job.log();
  const auto events = tl::testing::rescaleEvents(out);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["step"], kShrinkAt);
  EXPECT_EQ(events[1]["started_processes"], 2);
  const int64_t grownAt = events[1]["step"];
  EXPECT_GE(grownAt, kGrowFrom);
  // Stop once the lead has written a window wholly after the grow.
  auto leadWindowAfterGrow = [&] {
    for (const auto& w : usageWindows(out))
      if (w["rank"] == 0 && w["first_step"].get<int64_t>() > grownAt) return true;
    return false;
  };
  for (int i = 0; i < 1200 && !leadWindowAfterGrow() && !job.ended(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto stop = runCommand(std::string(TL_CTL_BIN) + " stop " + out, 200, dir);
  EXPECT_EQ(stop.exitCode, 0) << stop.out << stop.err;
  ASSERT_EQ(job.wait(), 0) << job.log();

  // The lead's windows: each one between two changes has the traffic of that layout.
  // A change is applied at the boundary after its step, so a window starting at that step
  // carries the change's own traffic (the grow's state sent to the started processes): the
  // windows of a layout start after the step of the change that made it.
  const std::vector<std::pair<int64_t, int64_t>> spans = {{0, kShrinkAt}, {kShrinkAt + 1, grownAt}, {grownAt + 1, 1 << 30}};
  const std::vector<int> processes = {3, 2, 4};
  std::vector<int> checked(3, 0);
  std::map<int64_t, std::vector<json>> byPid;
  for (const auto& w : usageWindows(out)) {
    byPid[w.at("pid").get<int64_t>()].push_back(w);
    if (w["rank"] != 0) continue;
    for (size_t s = 0; s < spans.size(); ++s) {
      if (w["first_step"].get<int64_t>() >= spans[s].first && w["last_step"].get<int64_t>() <= spans[s].second) {
        expectRingTraffic(w, processes[s], "lead's window " + w["first_step"].dump());
        ++checked[s];
      }
    }
  }
  for (size_t s = 0; s < spans.size(); ++s) EXPECT_GE(checked[s], 1) << "no lead window with " << processes[s] << " processes";

  // summary.json: the four members at the end by rank, then the one that left at the shrink.
  const auto summary = json::parse(slurp(out + "/summary.json"));
  const auto& entries = summary.at("usage_processes");
  ASSERT_EQ(entries.size(), 5u) << entries.dump(1);
  std::set<int64_t> pids;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& p = entries[i];
    EXPECT_TRUE(p["recorded"].get<bool>()) << p.dump();
    for (const char* key : {"tx_burst_s", "memory_burst_mb", "compute_burst_s"}) EXPECT_GT(p[key].get<double>(), 0) << key << p.dump();
    pids.insert(p["pid"].get<int64_t>());
    if (i < 4) {
      EXPECT_EQ(p["rank"], int(i));
      EXPECT_TRUE(p["left_at_step"].is_null());
    }
  }
  EXPECT_EQ(pids.size(), 5u);
  EXPECT_FALSE(entries[0]["started_by_grow"].get<bool>());
  EXPECT_FALSE(entries[1]["started_by_grow"].get<bool>());
  for (size_t i : {2, 3}) {
    const auto& grown = entries[i];
    EXPECT_TRUE(grown["started_by_grow"].get<bool>());
    EXPECT_EQ(grown["joined_at_step"], grownAt);
    EXPECT_EQ(grown["first_step"], grownAt);
    EXPECT_EQ(grown["last_step"], summary["steps"]);
    expectRingTraffic(grown, 4, "grown process " + std::to_string(i));
    // Its windows reached metrics.jsonl, tagged with its rank, from its join on.
    const auto& windows = byPid[grown["pid"].get<int64_t>()];
    ASSERT_FALSE(windows.empty());
    EXPECT_EQ(windows.front()["first_step"], grownAt);
    for (const auto& w : windows) {
      EXPECT_EQ(w["rank"], int(i));
      expectRingTraffic(w, 4, "grown process's window");
    }
  }
  const auto& left = entries[4];
  EXPECT_FALSE(left["started_by_grow"].get<bool>());
  EXPECT_EQ(left["left_at_step"], kShrinkAt);
  EXPECT_EQ(left["first_step"], 1);
  EXPECT_EQ(left["last_step"], kShrinkAt);
  expectRingTraffic(left, 3, "the process that left");
  const auto& leftWindows = byPid[left["pid"].get<int64_t>()];
  ASSERT_FALSE(leftWindows.empty());
  for (const auto& w : leftWindows) EXPECT_LE(w["last_step"].get<int64_t>(), kShrinkAt);
}

}  // namespace
