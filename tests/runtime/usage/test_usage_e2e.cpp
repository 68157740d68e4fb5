// End-to-end: a 2-process tl-launch job records its resource usage, and the traffic it reports
// is the traffic its gradients must make (fp32 reduction, N = 2: an allreduce sends and receives
// 2(N-1)/N = 1 x the gradient bytes per step, plus the few bytes of the step's statistics).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "runtime/models/model.h"
#include "runtime/usage/twelve_metrics.h"
#include "tests/support/run_command.h"

namespace {

using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::vector<nlohmann::json> usageWindows(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.value("type", "") == "usage") out.push_back(j);
  }
  return out;
}

TEST(UsageE2E, TwoProcessJobRecordsTheTrafficOfItsGradients) {
  std::string error;
  const std::string data = tl::testing::makeSyntheticCifar("usage_data", 256, 16, 1, &error);
  ASSERT_EQ(error, "");
  const std::string out = freshDir("usage_e2e");
  const auto r = runCommand(tl::testing::mpirunPrefix(2) + TL_LAUNCH_BIN + " --dataset cifar10 --data-dir " + data +
                                " --model cnn --batch 8 --steps 31 --reduction fp32 --workers 0 "
                                "--log-every 0 --output-dir " + out,
                            240, out);
  ASSERT_EQ(r.exitCode, 0) << r.err;

  tl::models::ModelConfig cnn;
  cnn.arch = "cnn";
  const double gradientBytes = 4.0 * double(tl::models::countParameters(*tl::models::createModel(cnn)));
  const auto summary = nlohmann::json::parse(slurp(out + "/summary.json"));
  const auto& usage = summary.at("usage");
  for (const char* key : tl::usage::kMetricNames) ASSERT_TRUE(usage.contains(key)) << key;
  EXPECT_EQ(usage["first_step"], 1);
  EXPECT_EQ(usage["last_step"], 31);
  for (const char* dir : {"tx_bytes_per_step", "rx_bytes_per_step"}) {
    const double perStep = usage[dir].get<double>();
    EXPECT_GE(perStep, gradientBytes) << dir;
    EXPECT_LE(perStep, gradientBytes + 4096) << dir;  // the step's statistics and buffers: small
  }
  // The traffic is a sequence of bursts, at least one per step, covering the measured span.
  const double burst = usage["tx_burst_s"], idle = usage["tx_idle_s"], span = usage["span_s"];
  const int64_t bursts = usage["tx_bursts"];
  EXPECT_GE(bursts, 30);
  EXPECT_GT(burst, 0);
  EXPECT_GT(idle, 0);
  EXPECT_NEAR((burst + idle) * double(bursts), span, burst + idle + 1e-3);
  EXPECT_GT(usage["tx_burst_mb_per_s"].get<double>(), 0);
  // Memory: the resident set while training, not above the peak the job reports.
  EXPECT_GT(usage["memory_burst_mb"].get<double>(), 10);
  EXPECT_LE(usage["memory_burst_mb"].get<double>(), summary["peak_rss_mb"].get<double>() + 1);
  EXPECT_GT(usage["compute_burst_util"].get<double>(), tl::usage::kComputeBusyThreshold);
  EXPECT_GT(usage["compute_burst_s"].get<double>(), 0);

  const auto& processes = summary.at("usage_processes");
  ASSERT_EQ(processes.size(), 2u);
  for (size_t r = 0; r < processes.size(); ++r) {
    const auto& p = processes[r];
    EXPECT_EQ(p["rank"], int(r));
    EXPECT_TRUE(p["recorded"].get<bool>());
    EXPECT_FALSE(p["started_by_grow"].get<bool>());
    EXPECT_TRUE(p["joined_at_step"].is_null());
    EXPECT_TRUE(p["left_at_step"].is_null());
    EXPECT_GT(p["tx_burst_s"].get<double>(), 0);
    EXPECT_GT(p["memory_burst_mb"].get<double>(), 10);
    if (r == 0) {
      EXPECT_EQ(p["tx_bytes_per_step"], usage["tx_bytes_per_step"]);  // the lead's own figures
    }
  }

  // metrics.jsonl: each process's windows of 10 steps after the first boundary, each with 10
  // steps' traffic (the lead's as they close, the other's at the end), tagged by process.
  const auto windows = usageWindows(out + "/metrics.jsonl");
  ASSERT_EQ(windows.size(), 6u);
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<nlohmann::json> mine;
    for (const auto& w : windows)
      if (w["rank"] == rank) mine.push_back(w);
    ASSERT_EQ(mine.size(), 3u) << rank;
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i]["pid"], processes[size_t(rank)]["pid"]);
      EXPECT_EQ(mine[i]["first_step"], 1 + 10 * int(i));
      EXPECT_EQ(mine[i]["last_step"], 11 + 10 * int(i));
      EXPECT_EQ(mine[i]["tx_bytes"], mine[0]["tx_bytes"]);  // fp32: the same bytes every step
      EXPECT_GE(mine[i]["tx_bursts"].get<int64_t>(), 10);
    }
  }
}

}  // namespace
