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

// The job described by tl-launch's own flags after `--`: the same prediction as tl-predict's
// shape flags give for the same job, the data set's geometry and length, and every given flag
// the prediction leaves out named in one line.
TEST(PredictCli, TakesTheJobAsTlLaunchFlagsAfterDashes) {
  const std::string dir = freshDir("predict_cli_launch");
  std::string error;
  const std::string data = tl::testing::makeSyntheticCifar("predict_cli_data", 256, 32, 1, &error);
  ASSERT_EQ(error, "");
  const std::string bin = TL_PREDICT_BIN;
  auto own = runCommand(bin + " --model cnn --batch 8 --processes 2 --steps 12 --reduction fp32 --json",
                        120, dir);
  ASSERT_EQ(own.exitCode, 0) << own.err;
  auto launch = runCommand(bin + " --processes 2 --json -- --model cnn --batch 8 --steps 12 --reduction fp32 "
                                 "--dataset cifar10 --data-dir " + data + " --lr 0.01 --seed 3",
                           120, dir);
  ASSERT_EQ(launch.exitCode, 0) << launch.err;
  EXPECT_EQ(launch.err, "") << "--lr and --seed change no resource: nothing to name";
  const auto a = nlohmann::json::parse(own.out), b = nlohmann::json::parse(launch.out);
  EXPECT_EQ(a["shape"], b["shape"]);
  EXPECT_EQ(a["trace"]["parameters"], b["trace"]["parameters"]);
  EXPECT_EQ(a["analytic"]["tx_burst_s"], b["analytic"]["tx_burst_s"]);
  EXPECT_FALSE(b.contains("not_modelled"));

  // One epoch of 256 images on 4 ESTs of batch 8: 8 steps; 2 ESTs per process; adam's 2 slots.
  auto epoch = runCommand(bin + " --json -- --model mlp --dataset cifar10 --data-dir " + data +
                              " --epochs 1 --batch 8 --logical-workers 4 --placement 2,2 --optimizer adam"
                              " --workers 3 --eval --checkpoint-every 4 --output-dir " + dir + "/out",
                          120, dir);
  ASSERT_EQ(epoch.exitCode, 0) << epoch.err;
  const auto e = nlohmann::json::parse(epoch.out);
  EXPECT_EQ(e["shape"]["steps"], 8);
  EXPECT_EQ(e["shape"]["processes"], 2);
  EXPECT_EQ(e["shape"]["ests_per_process"], 2);
  EXPECT_EQ(e["shape"]["optimizer"], "adam");
  EXPECT_EQ(epoch.err, "tl-predict: not modelled (predicted as if not given): --workers 3, --eval, "
                       "--checkpoint-every 4\n");
  EXPECT_EQ(e["not_modelled"], nlohmann::json({"--workers 3", "--eval", "--checkpoint-every 4"}));
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
                             "--kind: unknown value 'forest'"},
                        Case{"--batch 8 -- --model cnn", "--batch: the job is described after `--`"},
                        Case{"-- --batch= --steps 2", "--batch: expected an integer, got ''"},
                        Case{"-- --frobnicate 3", "unknown flag '--frobnicate' (see tl-launch --help)"},
                        Case{"--processes 3 -- --placement 2,1 --logical-workers 3",
                             "--processes 3 differs from the 2 processes of --placement"},
                        Case{"-- --dataset cifar10 --data-dir " + dir + "/nowhere --steps 2",
                             dir + "/nowhere"}}) {
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
