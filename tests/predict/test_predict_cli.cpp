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
                        Case{"evaluate --dataset " + dir + "/missing.jsonl --holdout cnn", "cannot be read"}}) {
    SCOPED_TRACE(c.args);
    const auto r = runCommand(std::string(TL_PREDICT_BIN) + " " + c.args, 60, dir);
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_NE(r.err.find("tl-predict: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
