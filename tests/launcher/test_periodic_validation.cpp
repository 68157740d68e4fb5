// Periodic validation (--eval-every, --eval-batches, --keep-best) end to end under real mpirun:
// the validation loss is the same double on every placement, through a checkpoint-restart and
// an in-place shrink and grow; validating changes no training bit (BatchNorm, dropout);
// --keep-best keeps a loadable model of the lowest loss; bad input is one line naming the flag.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/launcher/own_model_fixture.h"
#include "tests/support/background_job.h"
#include "tests/support/run_command.h"

namespace {

using tl::testing::CommandResult;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;



nlohmann::json summary(const std::string& out) { return nlohmann::json::parse(slurp(out + "/summary.json")); }

// The eval records of metrics.jsonl: step -> val_loss, as the file has it.
std::map<int64_t, double> evals(const std::string& out) {
  std::map<int64_t, double> m;
  std::ifstream in(out + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("type") != "eval") continue;
    const int64_t step = j.at("step");
    EXPECT_EQ(m.count(step), 0u) << "step " << step << " validated twice in " << out;
    m[step] = j.at("val_loss").get<double>();
  }
  return m;
}

// Bitwise, not ==: the contract is the same double.
bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expectSameEvals(const std::map<int64_t, double>& got, const std::map<int64_t, double>& want,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [step, loss] : want) {
    ASSERT_EQ(got.count(step), 1u) << what << ": no validation at step " << step;
    EXPECT_TRUE(sameBits(got.at(step), loss))
        << what << ": step " << step << " val_loss " << got.at(step) << " against " << loss;
  }
}

class PeriodicValidation : public tl::testing::OwnModelFixture {
 protected:
  static void SetUpTestSuite() { prepare("eval"); }

  // examples/gpt's decoder at its smallest on the token data; `np` 0: without mpirun (--check).
  static std::string gptJob(int steps) {
    return " --dataset tokens --seq-len 8 --data-dir " + tokens() + " --model-returns loss --model-file " +
           module("tiny_gpt.pt") + " --batch 4 --logical-workers 4 --steps " + std::to_string(steps) +
           " --seed 3 --log-every 0 --workers 1 --optimizer adamw --lr 0.003";
  }

  static CommandResult launch(int np, const std::string& out, const std::string& job, const std::string& more = "") {
    const std::string cmd = (np > 0 ? tl::testing::mpirunPrefix(np) : std::string()) + TL_LAUNCH_BIN + job +
                            " --output-dir " + out + " " + more;
    return runCommand(cmd, 300, out);
  }
};

// DDP mode (4 processes) = 3,1 = 2,2 = a checkpoint-restart = an in-place shrink and grow: the
// same val_loss at every validated step, bit for bit, and the same params_sha256 as the job
// without validation. 5 batches on 4, 2 and 1 processes: round-robin shares of every size.
TEST_F(PeriodicValidation, SameValLossOnEveryPlacementAndTheTrainingUnchanged) {
  const std::string job = gptJob(8);
  const std::string eval = " --eval-every 2 --eval-batches 5";
  const std::string plain = freshDir("eval_plain");
  ASSERT_EQ(launch(2, plain, job, "--placement 3,1").exitCode, 0);
  const std::string sha = summary(plain).at("params_sha256");

  const std::string ddp = freshDir("eval_ddp");
  auto r = launch(4, ddp, job + eval, "--control-bind none");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto want = evals(ddp);
  ASSERT_EQ(want.size(), 4u);  // steps 2, 4, 6, 8
  for (const auto& [step, loss] : want) {
    EXPECT_TRUE(std::isfinite(loss) && loss > 0.5 && loss < 10) << "step " << step << ": " << loss;
  }
  EXPECT_NE(want.begin()->second, want.rbegin()->second) << "the model trained: its loss moved";
  EXPECT_EQ(summary(ddp).at("params_sha256"), sha) << "validating changed the training";
  // Tokens: the perplexity beside the loss.
  std::ifstream in(ddp + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("type") != "eval") continue;
    EXPECT_EQ(j.at("batches"), 5);
    EXPECT_EQ(j.at("val_ppl").get<double>(), std::exp(j.at("val_loss").get<double>()));
  }

  for (const std::string placement : {"3,1", "2,2"}) {
    const std::string out = freshDir("eval_" + placement.substr(0, 1) + placement.substr(2));
    r = launch(2, out, job + eval, "--placement " + placement);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    expectSameEvals(evals(out), want, "placement " + placement);
    EXPECT_EQ(summary(out).at("params_sha256"), sha) << placement;
  }

  // A checkpoint after the validation of step 4, resumed on one process: step 4 is not
  // validated again, and 6 and 8 are as before.
  const std::string first = freshDir("eval_ck");
  r = launch(2, first, job + eval, "--stop-at-step 4");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string resumed = freshDir("eval_resumed");
  r = runCommand(tl::testing::mpirunPrefix(1) + TL_LAUNCH_BIN + " --resume " + first + "/checkpoint --log-every 0" +
                     " --output-dir " + resumed,
                 300, resumed);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::map<int64_t, double> joined = evals(first);
  for (const auto& [step, loss] : evals(resumed)) {
    EXPECT_EQ(joined.count(step), 0u) << "step " << step << " validated before and after the restart";
    joined[step] = loss;
  }
  expectSameEvals(joined, want, "checkpoint at 4 on 2, resumed on 1 (the resumed job keeps --eval-every)");
  EXPECT_EQ(summary(resumed).at("params_sha256"), sha);
}

// The same through an in-place shrink 2 -> 1 and grow 1 -> 2 (tl-ctl) while the job
// validates: the joining process validates with the others (or the job would hang).
TEST_F(PeriodicValidation, SameValLossThroughAnInPlaceShrinkAndGrow) {
  const std::string job = gptJob(200) + " --eval-every 20 --eval-batches 5";
  const std::string ddp = freshDir("eval_rescale_ddp");
  auto r = launch(4, ddp, job, "--control-bind none");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto want = evals(ddp);
  ASSERT_EQ(want.size(), 10u);

  const std::string dir = freshDir("eval_inplace");
  const std::string out = dir + "/out";
  tl::testing::BackgroundJob background(2, job + " --output-dir " + out, dir,
                                        "env TL_TEST_UPDATE_DELAY_MS=75 " + tl::testing::mpirunPrefix(2));
  ASSERT_TRUE(background.waitForControl(out)) << background.log();
  auto results = tl::testing::queueCommands({"rescale " + out + " --processes 1", "rescale " + out + " --processes 2"},
                                            out, dir);
  for (const auto& c : results) EXPECT_EQ(c.exitCode, 0) << c.out << c.err;
  ASSERT_EQ(background.wait(), 0) << background.log();
  EXPECT_EQ(tl::testing::rescaleEvents(out).size(), 2u) << "the job ended before both rescales";
  expectSameEvals(evals(out), want, "in place 2 -> 1 -> 2");
  EXPECT_EQ(summary(out).at("params_sha256"), summary(ddp).at("params_sha256"));
}

// BatchNorm and dropout: validating in eval mode touches neither the running statistics nor
// the generators the training draws from, and the model trains on in training mode.
TEST_F(PeriodicValidation, BatchNormAndDropoutTrainTheSameWithValidation) {
  const std::string job = " --dataset cifar10 --data-dir " + images() + " --model-file " + module("bn_dropout_cnn.pt") +
                          " --batch 8 --logical-workers 4 --steps 6 --seed 3 --log-every 0 --workers 1";
  const std::string plain = freshDir("eval_bn_plain"), validated = freshDir("eval_bn_validated");
  ASSERT_EQ(launch(2, plain, job, "--placement 3,1").exitCode, 0);
  auto r = launch(2, validated, job, "--placement 3,1 --eval-every 1 --eval-batches 3");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(summary(validated).at("params_sha256"), summary(plain).at("params_sha256"));
  EXPECT_EQ(evals(validated).size(), 6u);
  // The per-step losses too: each step's forward saw the same buffers and dropout masks.
  const auto losses = [](const std::string& out) {
    std::vector<double> l;
    std::ifstream in(out + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line);
      if (j.at("type") == "step") l.push_back(j.at("loss"));
    }
    return l;
  };
  EXPECT_EQ(losses(validated), losses(plain));
}

// --keep-best: best/ holds the model of the lowest val_loss (a state dict and the TorchScript
// module holding it), best.json and summary.json's best name its step.
TEST_F(PeriodicValidation, KeepBestWritesTheModelOfTheLowestValLoss) {
  const std::string out = freshDir("eval_best");
  auto r = launch(2, out, gptJob(12), "--eval-every 2 --eval-batches 4 --keep-best --save-model " + out + "/final.pt");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto e = evals(out);
  ASSERT_EQ(e.size(), 6u);
  auto min = e.begin();
  for (auto it = e.begin(); it != e.end(); ++it)
    if (it->second < min->second) min = it;
  const auto s = summary(out);
  ASSERT_TRUE(s.contains("best")) << s.dump();
  EXPECT_EQ(s["best"]["step"], min->first);
  EXPECT_TRUE(sameBits(s["best"]["val_loss"].get<double>(), min->second));
  const auto best = nlohmann::json::parse(slurp(out + "/best/best.json"));
  EXPECT_EQ(best["step"], min->first);
  // The files load: the TorchScript module holds the state dict.
  ASSERT_TRUE(std::filesystem::exists(out + "/best/model.pt"));
  ASSERT_TRUE(std::filesystem::exists(out + "/best/model.torchscript.pt"));
  r = runCommand(std::string(TL_TORCH_PYTHON) + " " + script() + " verify " + out + "/best/model.torchscript.pt " + out +
                     "/best/model.pt tokens",
                 120, out);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  // It is the model of that step: the final model's hash when the last step is the best,
  // another one otherwise.
  if (min->first == 12) EXPECT_EQ(best["params_sha256"], s["params_sha256"]);
  else EXPECT_NE(best["params_sha256"], s["params_sha256"]);
  EXPECT_NE(slurp(out + "/best/model.pt"), std::string()) << "empty state dict";
  // No temporaries left behind.
  for (const auto& f : std::filesystem::directory_iterator(out + "/best"))
    EXPECT_EQ(f.path().filename().string().find(".tmp"), std::string::npos) << f.path();
}

// Bad input: one line naming the flag, exit 2, before any step (--check as a launch).
TEST_F(PeriodicValidation, BadInputIsOneLineNamingTheFlag) {
  struct Case {
    std::string flags, expected;
  };
  const std::vector<Case> cases = {
      {"--eval-every 0", "--eval-every: must be at least 1, got 0"},
      {"--eval-every -3", "--eval-every: must be at least 1, got -3"},
      {"--eval-every 2 --eval-batches 0", "--eval-batches: must be at least 1, got 0"},
      {"--eval-batches 2", "--eval-batches: needs --eval-every"},
      {"--keep-best", "--keep-best: needs --eval-every"},
      {"--eval-every 2 --eval-batches 7", "--eval-batches 7: the test split holds 24 samples, 6 batches of --batch 4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flags);
    const std::string out = freshDir("eval_bad");
    auto r = launch(0, out, gptJob(4), "--check " + c.flags);
    EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_EQ(tl::testing::countOccurrences(r.err, "\n"), 1) << r.err;
  }
  // A real launch refuses too, before its first step.
  const std::string out = freshDir("eval_bad_launch");
  auto r = launch(2, out, gptJob(4), "--eval-every 2 --eval-batches 7");
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("--eval-batches 7"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out + "/summary.json"));
}

}  // namespace
