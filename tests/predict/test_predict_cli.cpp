// tl-predict as a user runs it: a prediction as JSON with the twelve metrics, and one clear
// error line (exit status 2) for bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/usage/twelve_metrics.h"
#include "tests/support/run_command.h"

namespace {

using tl::testing::freshDir;
using tl::testing::runCommand;

TEST(PredictCli, PrintsTheTwelveMetricsAsJson) {
  const std::string dir = freshDir("predict_cli");
  const auto r = runCommand(std::string(TL_PREDICT_BIN) + " --model cnn --batch 8 --processes 2 --reduction fp32 --json",
                            120, dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : tl::usage::kMetricNames) EXPECT_TRUE(j["analytic"].contains(key)) << key;
  EXPECT_FALSE(j.contains("learned"));
  // N = 2, fp32: the allreduce moves 1 x the gradient bytes each way.
  const double traffic = j["analytic"]["tx_burst_s"].get<double>() * 2e9;
  EXPECT_NEAR(traffic, 4.0 * j["trace"]["parameters"].get<double>() + 20e-6 * 2e9, 1.0);
}

// A dataset of four runs (numbers invented: the CLI is under test, not the prediction).
std::string writeTinyDataset(const std::string& dir) {
  const std::string path = dir + "/runs.jsonl";
  std::ofstream out(path);
  int i = 0;
  for (const char* model : {"cnn", "mlp"}) {
    for (int n : {2, 3}) {
      nlohmann::json shape = {{"model", model}, {"batch", 8}, {"processes", n}, {"steps", 12}, {"reduction", "fp32"}};
      nlohmann::json measured;
      for (const char* key : tl::usage::kMetricNames) measured[key] = 0.01 * ++i;
      nlohmann::json observed = {{"compute_bursts", 11}, {"tx_bursts", 33}, {"span_s", 0.5}, {"first_step", 1},
                                 {"last_step", 12}, {"tx_bytes_per_step", 1e6}};
      out << nlohmann::json{{"shape", shape}, {"measured", measured}, {"observed", observed}}.dump() << "\n";
    }
  }
  return path;
}

TEST(PredictCli, FitsTheGraphNetworkAndPredictsWithIt) {
  const std::string dir = freshDir("predict_cli_gnn");
  const std::string runs = writeTinyDataset(dir);
  const std::string bin = TL_PREDICT_BIN;
  auto r = runCommand(bin + " fit --kind gnn --dataset " + runs + " --out " + dir + "/gnn.json", 120, dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("gnn fitted on 4 runs"), std::string::npos) << r.out;
  r = runCommand(bin + " --model mlp --batch 8 --processes 2 --reduction fp32 --json --learned " + dir + "/gnn.json",
                 120, dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["learned_kind"], "gnn");
  EXPECT_GT(j["calibration"]["flops_per_s"].get<double>(), 0);  // the analytic column used the runs' rate
  for (const char* key : tl::usage::kMetricNames) EXPECT_GE(j["learned"][key].get<double>(), 0) << key;
  r = runCommand(bin + " evaluate --dataset " + runs + " --holdout mlp", 120, dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("analytic %   ridge %     gnn %    mean %"), std::string::npos) << r.out;
}

TEST(PredictCli, BadInputIsOneErrorLineAndExitTwo) {
  const std::string dir = freshDir("predict_cli_bad");
  {
    std::ofstream(dir + "/broken.json") << "{not json";
  }
  struct Case {
    std::string args, says;
  };
  for (const Case& c : {Case{"--model nope", "unknown model 'nope'"},
                        Case{"--reduction sum", "reduction: unknown value 'sum'"},
                        Case{"--learned " + dir + "/broken.json", "--learned '" + dir + "/broken.json': not JSON"},
                        Case{"evaluate --dataset " + dir + "/missing.jsonl --holdout cnn", "cannot be read"},
                        Case{"fit --kind forest --dataset " + dir + "/missing.jsonl --out " + dir + "/m.json",
                             "--kind: unknown value 'forest'"}}) {
    SCOPED_TRACE(c.args);
    const auto r = runCommand(std::string(TL_PREDICT_BIN) + " " + c.args, 60, dir);
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_NE(r.err.find("tl-predict: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(std::ifstream(dir + "/m.json").good());  // nothing half-written
}

}  // namespace
