// tl-launch --trace-steps under real mpirun: the steps asked for, and only they, recorded by
// libtorch's profiler into one Chrome trace per process, with tl's phases as spans; the job's
// bits unchanged; bench/reference/trace_summary.py reads the trace; bad values refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/run_command.h"

namespace {

using tl::testing::countOccurrences;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gDataDir;

class StepTrace : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    gDataDir = tl::testing::makeSyntheticCifar("trace_data", 256, 32, 1, &error);
    ASSERT_EQ(error, "");
  }

  static tl::testing::CommandResult launch(int np, const std::string& out,
                                           const std::string& extra) {
    return runCommand(tl::testing::mpirunPrefix(np) + TL_LAUNCH_BIN +
                          " --dataset cifar10 --data-dir " + gDataDir +
                          " --model cnn --batch 8 --workers 0 --log-every 0 --steps 4 " +
                          (out.empty() ? std::string() : "--output-dir " + out + " ") + extra,
                      180, out.empty() ? freshDir("trace_cwd") : out);
  }

  // Span name -> count, for the host spans of tl's phases and steps (category user_annotation).
  static std::map<std::string, int> spans(const nlohmann::json& trace) {
    std::map<std::string, int> n;
    for (const auto& e : trace["traceEvents"])
      if (e["cat"] == "user_annotation") ++n[e["name"].get<std::string>()];
    return n;
  }

  static int atenOps(const nlohmann::json& trace) {
    int n = 0;
    for (const auto& e : trace["traceEvents"])
      n += e["cat"] == "cpu_op" && e["name"].get<std::string>().rfind("aten::", 0) == 0;
    return n;
  }
};

TEST_F(StepTrace, RecordsTheStepsAskedForOnEveryProcessAndChangesNoBit) {
  const std::string plain = freshDir("trace_plain"), traced = freshDir("trace_traced");
  // 4 ESTs as 3,1: the lead runs three forward/backward passes a step, rank 1 one.
  const std::string job = "--logical-workers 4 --placement 3,1";
  auto a = launch(2, plain, job);
  ASSERT_EQ(a.exitCode, 0) << a.out << a.err;
  auto b = launch(2, traced, job + " --trace-steps 2-3");
  ASSERT_EQ(b.exitCode, 0) << b.out << b.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(plain + "/summary.json"))["params_sha256"],
            nlohmann::json::parse(slurp(traced + "/summary.json"))["params_sha256"])
      << "recording must not change the job's bits";
  EXPECT_FALSE(std::filesystem::exists(plain + "/trace")) << "no trace unless asked for";
  EXPECT_EQ(countOccurrences(b.out, "trace of steps 2-3"), 1)
      << "the lead says where it went, once:\n"
      << b.out;

  const int estsOf[2] = {3, 1};
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path = traced + "/trace/rank-" + std::to_string(rank) + ".json";
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    const auto trace = nlohmann::json::parse(slurp(path));
    EXPECT_EQ(trace["tl"]["steps"], nlohmann::json::array({2, 3}));
    EXPECT_EQ(trace["tl"]["steps_recorded"], 2);
    const auto n = spans(trace);
    EXPECT_EQ(n.count("tl::step 1"), 0u) << "rank " << rank;
    EXPECT_EQ(n.count("tl::step 4"), 0u) << "rank " << rank;
    EXPECT_EQ(n.at("tl::step 2"), 1) << "rank " << rank;
    EXPECT_EQ(n.at("tl::step 3"), 1) << "rank " << rank;
    EXPECT_EQ(n.at("tl::forward_backward"), 2 * estsOf[rank]) << "rank " << rank;
    EXPECT_GE(n.at("tl::reduce"), 2) << "rank " << rank;
    EXPECT_EQ(n.at("tl::optimizer"), 2) << "rank " << rank;
    // A CNN step: convolutions forward and backward, among a few hundred ATen ops.
    EXPECT_GT(atenOps(trace), 100) << "rank " << rank;
    int convolutions = 0;
    for (const auto& e : trace["traceEvents"]) {
      ASSERT_EQ(e["ph"], "X");
      ASSERT_GE(e["ts"].get<double>(), 0.0);
      ASSERT_GE(e["dur"].get<double>(), 0.0);
      convolutions += e["name"] == "aten::convolution";
    }
    EXPECT_EQ(convolutions % 2, 0);
    EXPECT_GE(convolutions, 2 * 2 * estsOf[rank]) << "two convolutions per forward, two steps";
  }

  // bench/reference/trace_summary.py reads it: both steps, their ATen ops, no device on a CPU.
  const std::string summaryJson = traced + "/trace_summary.json";
  auto s = runCommand("python3 " TL_SOURCE_DIR "/bench/reference/trace_summary.py " + traced +
                          "/trace/rank-0.json --json " + summaryJson,
                      60, traced);
  ASSERT_EQ(s.exitCode, 0) << s.out << s.err;
  const auto summary = nlohmann::json::parse(slurp(summaryJson));
  const auto& steps = summary["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 2u) << s.out;
  for (const auto& step : steps) {
    EXPECT_GT(step["aten_ops"].get<int>(), 100) << s.out;
    EXPECT_EQ(step["kernels"], 0) << s.out;
    EXPECT_GT(step["wall_ms"].get<double>(), 0) << s.out;
  }
}

TEST_F(StepTrace, TheLastStepAloneOnOneProcess) {
  const std::string out = freshDir("trace_last");
  auto r = launch(1, out, "--trace-steps 4");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const auto n = spans(nlohmann::json::parse(slurp(out + "/trace/rank-0.json")));
  EXPECT_EQ(n.at("tl::step 4"), 1);
  EXPECT_EQ(n.count("tl::step 3"), 0u);
  EXPECT_EQ(n.at("tl::forward_backward"), 1);
}

TEST_F(StepTrace, BadValuesAreOneClearErrorBeforeTraining) {
  const std::string out = freshDir("trace_bad");
  struct Case {
    std::string flags, expected;
    bool withOutput;
  };
  const std::vector<Case> cases = {
      {"--trace-steps 0", "--trace-steps: steps count from 1, got 0", true},
      {"--trace-steps 3-2", "--trace-steps: the last step (2) comes before the first (3)", true},
      {"--trace-steps 2-x", "--trace-steps: expected an integer, got 'x'", true},
      {"--trace-steps 3-9", "--trace-steps 3-9: the job has 4 steps", true},
      {"--trace-steps 2", "--trace-steps: needs --output-dir", false},
  };
  for (const auto& c : cases) {
    auto r = launch(1, c.withOutput ? out : "", c.flags);
    EXPECT_NE(r.exitCode, 0) << c.flags;
    EXPECT_EQ(countOccurrences(r.err, "tl-launch: error:"), 1) << c.flags << "\n" << r.err;
    EXPECT_EQ(countOccurrences(r.err, c.expected), 1)
        << c.flags << ": expected '" << c.expected << "' in:\n"
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(out + "/trace")) << c.flags;
  }
}

}  // namespace
