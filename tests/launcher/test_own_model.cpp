// --model-file end to end: TorchScript modules exported by the system PyTorch
// (own_models.py), trained by tl-launch under real mpirun on synthetic CIFAR-format data.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <thread>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "tests/launcher/own_model_fixture.h"
#include "tests/support/background_job.h"
#include "tests/support/consistency_csv.h"
#include "tests/support/rank_processes.h"
#include "tests/support/run_command.h"

namespace {

using tl::testing::CommandResult;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;


std::string summarySha(const std::string& out) {
  return nlohmann::json::parse(slurp(out + "/summary.json")).at("params_sha256");
}


class OwnModel : public tl::testing::OwnModelFixture {
 protected:
  static void SetUpTestSuite() { prepare("own_model"); }

  // tl-launch on the synthetic data; `np` 0: without mpirun (for --check).
  static CommandResult launch(int np, const std::string& out, const std::string& flags) {
    const std::string cmd = (np > 0 ? tl::testing::mpirunPrefix(np) : std::string()) + TL_LAUNCH_BIN +
                            " --dataset cifar10 --data-dir " + images() +
                            " --batch 8 --log-every 0 --workers 1 --output-dir " + out + " " + flags;
    return runCommand(cmd, 300, out);
  }

  // tl-launch of a loss-returning module on the token data (32 ids, 8 per sample).
  static CommandResult launchTokens(int np, const std::string& out, const std::string& flags, int logEvery = 0) {
    const std::string cmd = (np > 0 ? tl::testing::mpirunPrefix(np) : std::string()) + TL_LAUNCH_BIN +
                            " --dataset tokens --seq-len 8 --data-dir " + tokens() + " --model-returns loss --batch 4" +
                            " --log-every " + std::to_string(logEvery) + " --workers 1 --output-dir " + out + " " + flags;
    return runCommand(cmd, 300, out);
  }

  static std::string sha(const std::string& out) { return summarySha(out); }
};

// The consistency contract for a scripted model with BatchNorm and dropout: DDP (one EST per
// process), placements 4 / 3,1 / 2,2 and a checkpoint-restart give the same bits.
TEST_F(OwnModel, SameBitsOnEveryPlacementAndAcrossACheckpointRestart) {
  const std::string job = "--model-file " + module("bn_dropout_cnn.pt") + " --logical-workers 4 --steps 6 --seed 3";
  std::vector<std::string> shas;
  for (auto [np, placement] : std::vector<std::pair<int, std::string>>{{4, ""}, {1, ""}, {2, "--placement 3,1"}, {2, "--placement 2,2"}}) {
    const std::string out = freshDir("own_model_p" + std::to_string(np) + (placement.empty() ? "" : placement.substr(12)));
    auto r = launch(np, out, job + " " + placement);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    shas.push_back(sha(out));
  }
  for (size_t i = 1; i < shas.size(); ++i) EXPECT_EQ(shas[i], shas[0]) << "run " << i;

  const std::string first = freshDir("own_model_ck");
  auto r = launch(2, first, job + " --stop-at-step 3");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // The file is not needed at its first path: the same module elsewhere resumes the job...
  const std::string moved = freshDir("own_model_moved") + "/same.pt";
  std::filesystem::copy_file(module("bn_dropout_cnn.pt"), moved);
  const std::string resumed = freshDir("own_model_resumed");
  r = runCommand(tl::testing::mpirunPrefix(1) + TL_LAUNCH_BIN + " --resume " + first + "/checkpoint --data-dir " +
                     images() + " --output-dir " + resumed + " --log-every 0 --model-file " + moved,
                 300, resumed);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(sha(resumed), shas[0]);
  // ...another module is refused, naming both hashes.
  const std::string other = freshDir("own_model_other");
  r = runCommand(std::string(TL_LAUNCH_BIN) + " --check --resume " + first + "/checkpoint --data-dir " + images() +
                     " --model-file " + module("other_cnn.pt"),
                 120, other);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--model-file sha256:"), std::string::npos) << r.err;
  EXPECT_EQ(tl::testing::countOccurrences(r.err, "sha256:"), 2) << r.err;
}

// The consistency contract of a scripted model, end to end: a job of 4 ESTs (`job`: every flag
// but the output folder) gives the bits of DDP mode (4 processes, one EST each) on placements
// 3,1 and 2,2, across a checkpoint-restart (2 processes, then 1), through an in-place shrink
// 2 -> 1 and grow 1 -> 2 (tl-ctl), and through a tl-run recovery from a SIGKILLed rank.
//
// The in-place job must outlast both requests and the grow's new process getting ready (it
// starts libtorch, slowly under CI's load), and the supervised job the kill: their optimizer
// updates hold on (TL_TEST_UPDATE_DELAY_MS: timing only, the bits do not change), so the job
// can be short.
constexpr const char* kInplaceDelay = "env TL_TEST_UPDATE_DELAY_MS=75 ";
constexpr const char* kRecoveryDelay = "env TL_TEST_UPDATE_DELAY_MS=15 ";

void checkContract(const std::string& name, const std::string& job) {
  const auto run = [&](int np, const std::string& out, const std::string& more) {
    auto r = runCommand(tl::testing::mpirunPrefix(np) + TL_LAUNCH_BIN + job + " --output-dir " + out + more, 300, out);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return r.exitCode == 0 ? summarySha(out) : std::string("failed");
  };
  const std::string ddp = run(4, freshDir(name + "_ddp"), " --control-bind none");
  std::vector<std::pair<std::string, std::string>> cells = {{"ddp -np 4", ddp}};
  cells.push_back({"-np 2, 3,1", run(2, freshDir(name + "_31"), " --placement 3,1")});
  cells.push_back({"-np 2, 2,2", run(2, freshDir(name + "_22"), " --placement 2,2")});

  const std::string first = freshDir(name + "_ck");
  run(2, first, " --stop-at-step 5");
  const std::string resumed = freshDir(name + "_resumed");
  auto r = runCommand(tl::testing::mpirunPrefix(1) + TL_LAUNCH_BIN + " --resume " + first +
                          "/checkpoint --log-every 0 --output-dir " + resumed,
                      300, resumed);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  cells.push_back({"checkpoint at 5 on 2, resumed on 1", r.exitCode == 0 ? summarySha(resumed) : "failed"});

  {
    const std::string dir = freshDir(name + "_inplace");
    const std::string out = dir + "/out";
    tl::testing::BackgroundJob background(2, job + " --output-dir " + out, dir,
                                          kInplaceDelay + tl::testing::mpirunPrefix(2));
    EXPECT_TRUE(background.waitForControl(out)) << background.log();
    auto results = tl::testing::queueCommands({"rescale " + out + " --processes 1", "rescale " + out + " --processes 2"},
                                              out, dir);
    for (const auto& c : results) EXPECT_EQ(c.exitCode, 0) << c.out << c.err;
    EXPECT_EQ(background.wait(), 0) << background.log();
    EXPECT_EQ(tl::testing::rescaleEvents(out).size(), 2u) << "the job ended before both rescales";
    cells.push_back({"in place 2 -> 1 -> 2 (tl-ctl)", summarySha(out)});
  }

  {
    const std::string out = freshDir(name + "_recovery");
    const std::string tlRun = kRecoveryDelay + std::string(TL_RUN_BIN) +
                              " --np 2 --max-restarts 1 --hang-timeout 20 --mpirun " + TL_MPIEXEC +
                              " --mpirun-args --oversubscribe --launch " + TL_LAUNCH_BIN + " --" +
                              job + " --output-dir " + out;
    CommandResult result;
    std::thread supervised([&] { result = runCommand(tlRun, 300, freshDir(name + "_recovery_cmd")); });
    EXPECT_TRUE(tl::testing::waitUntil(
        [&] { return tl::testing::lastStep(out) >= 4 && tl::testing::rankProcesses(out).size() == 2; }, 120));
    const auto pids = tl::testing::rankProcesses(out);
    if (!pids.empty()) ::kill(pids.back(), SIGKILL);
    supervised.join();
    EXPECT_EQ(result.exitCode, 0) << result.err;
    const auto s = nlohmann::json::parse(slurp(out + "/summary.json"));
    EXPECT_EQ(s["recovery"]["recoveries"], 1) << "the kill came too late: the job had ended";
    cells.push_back({"tl-run, a rank SIGKILLed: 2 -> 1", s["params_sha256"]});
  }
  for (const auto& [what, sha] : cells) EXPECT_EQ(sha, ddp) << name << ": " << what;
  tl::testing::recordConsistencyCells(name, "exact", std::map<std::string, std::string>(cells.begin(), cells.end()));
}

// A scripted CNN with BatchNorm and dropout, on image data.
TEST_F(OwnModel, ContractForAScriptedCnnWithBatchNormAndDropout) {
  checkContract(
      "own_contract_cnn",
      " --dataset cifar10 --data-dir " + images() + " --model-file " + module("bn_dropout_cnn.pt") +
          " --batch 8 --logical-workers 4 --steps 400 --seed 3 --log-every 0 --workers 1");
}

// examples/gpt's decoder at its smallest, a model that returns its loss, on token data.
TEST_F(OwnModel, ContractForAScriptedGptOnTokens) {
  checkContract(
      "own_contract_gpt",
      " --dataset tokens --seq-len 8 --data-dir " + tokens() + " --model-returns loss" +
          " --model-file " + module("tiny_gpt.pt") +
          " --batch 4 --logical-workers 4 --steps 400 --seed 3 --log-every 0 --workers 1");
}

// The same GPT with the recipe a GPT trainer uses (issue 40): AdamW with betas (0.9, 0.95), a
// warm-up and cosine decay in steps, weight decay on matrices only, clipping, 2 micro-batches.
TEST_F(OwnModel, ContractForAScriptedGptWithTheGptRecipe) {
  checkContract(
      "own_contract_gpt_recipe",
      " --dataset tokens --seq-len 8 --data-dir " + tokens() + " --model-returns loss" +
          " --model-file " + module("tiny_gpt.pt") +
          " --batch 4 --logical-workers 4 --steps 400 --seed 3 --log-every 0 --workers 1" +
          " --optimizer adamw --lr 0.003 --beta2 0.95 --weight-decay 0.1 --weight-decay-on matrices" +
          " --lr-schedule cosine --warmup-steps 40 --min-lr 0.0003 --clip-grad-norm 1 --micro-batches 2");
}

// The built-in cnn exported from its PyTorch definition, initialised as tl initialises it
// under the same seed, trains to the same bits as --model cnn.
TEST_F(OwnModel, ExportedBuiltinCnnMatchesModelCnn) {
  const std::string common = " --logical-workers 2 --steps 5 --seed 7";
  const std::string a = freshDir("own_model_builtin"), b = freshDir("own_model_exported");
  auto r = launch(2, a, "--model cnn" + common);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = launch(2, b, "--model-file " + module("builtin_cnn_seed7.pt") + common);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(sha(a), sha(b));
}

// A module that computes its own loss trains and evaluates (mean loss, no accuracy), and
// --save-model writes the trained module as TorchScript holding the saved state dict.
TEST_F(OwnModel, ReturnsLossTrainsAndSavesTorchScript) {
  const std::string out = freshDir("own_model_loss");
  auto r = launch(2, out, "--model-file " + module("returns_loss.pt") +
                              " --model-returns loss --steps 8 --eval --save-model " + out + "/m.pt");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto s = nlohmann::json::parse(slurp(out + "/summary.json"));
  EXPECT_GT(s.at("final_loss").get<double>(), 0.5);
  EXPECT_GT(s.at("test_loss").get<double>(), 0.5);
  EXPECT_FALSE(s.contains("test_acc")) << "a module that returns its loss has no class scores to be accurate with";
  EXPECT_FALSE(s.contains("train_acc"));
  EXPECT_FALSE(s.contains("test_perplexity")) << "perplexity is for --dataset tokens";
  ASSERT_TRUE(std::filesystem::exists(out + "/m.torchscript.pt"));
  r = runCommand(std::string(TL_TORCH_PYTHON) + " " + script() + " verify " + out + "/m.torchscript.pt " + out +
                     "/m.pt",
                 120, out);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
}

// A language model on --dataset tokens is evaluated by its mean loss and perplexity; it has no
// accuracy to report.
TEST_F(OwnModel, TokenModelReportsLossAndPerplexityNotAccuracy) {
  const std::string out = freshDir("own_model_gpt_eval");
  auto r = launchTokens(2, out, "--model-file " + module("tiny_gpt.pt") + " --steps 4 --eval", 2);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto s = nlohmann::json::parse(slurp(out + "/summary.json"));
  const double loss = s.at("test_loss").get<double>();
  EXPECT_GT(loss, 1.0) << "about log 32 for an untrained model";
  ASSERT_TRUE(s.contains("test_perplexity")) << s.dump();
  EXPECT_NEAR(s.at("test_perplexity").get<double>(), std::exp(loss), 1e-9 * std::exp(loss));
  EXPECT_FALSE(s.contains("test_acc")) << s.dump();
  EXPECT_FALSE(s.contains("train_acc")) << s.dump();
  EXPECT_EQ(r.out.find("accuracy"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("accuracy"), std::string::npos) << r.err;
  // Nor a constant "acc 0.000" in the progress lines and step records.
  std::istringstream log(r.out + r.err);
  int progressLines = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.find("] step ") == std::string::npos) continue;
    ++progressLines;
    EXPECT_EQ(line.find(" acc "), std::string::npos) << line;
    EXPECT_NE(line.find("samples/s"), std::string::npos) << line;
  }
  EXPECT_EQ(progressLines, 2) << r.out << r.err;
  std::ifstream metrics(out + "/metrics.jsonl");
  int steps = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("type") != "step") continue;
    ++steps;
    EXPECT_FALSE(j.contains("acc")) << line;
  }
  EXPECT_EQ(steps, 4);
}

// Token ids the module cannot take: one line naming the module and the token file, exit 2,
// before any step.
TEST_F(OwnModel, TokenIdsBeyondTheModuleAreRefused) {
  const std::string out = freshDir("own_model_gpt_vocab");
  auto r = launchTokens(0, out, "--check --model-file " + module("gpt_vocab16.pt"));
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("gpt_vocab16.pt"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(tokens() + "/train.npy' holds token id 31"), std::string::npos) << r.err;
  EXPECT_EQ(tl::testing::countOccurrences(r.err, "\n"), 1) << r.err;
  // A real launch refuses before its first step.
  r = launchTokens(2, out, "--steps 2 --model-file " + module("gpt_vocab16.pt"));
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out + "/summary.json"));
  // A negative id (an int32 file) is refused as the data are opened.
  const std::string neg = freshDir("own_model_negative");
  r = runCommand(std::string(TL_LAUNCH_BIN) + " --check --dataset tokens --seq-len 8 --data-dir " + module("negative_tokens") +
                     " --model-returns loss --model-file " + module("tiny_gpt.pt"),
                 120, neg);
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("negative_tokens/train.npy': token 50 is -3"), std::string::npos) << r.err;
}

// Bad input: one line naming the file or flag, exit 2, before any step (--check runs the same).
TEST_F(OwnModel, BadModulesAreRefusedInOneLine) {
  struct Case {
    std::string flags, expected;
  };
  const std::vector<Case> cases = {
      {"--model-file " + module("state_dict.pt"), "is not a TorchScript module"},
      {"--model-file " + module("text.pt"), "is not a TorchScript module (not a zip archive)"},
      {"--model-file " + module("truncated.pt"), "is not a TorchScript module"},
      {"--model-file " + module("missing.pt"), "no such file"},
      {"--model-file " + module("no_parameters.pt"), "has no trainable parameters"},
      {"--model-file " + module("flat_mnist.pt"), "does not accept the dataset's batch (inputs Float [2, 3, 32, 32]"},
      {"--model-file " + module("loss_per_sample.pt") + " --model-returns loss", "must return a scalar loss"},
      {"--model-file " + module("five_classes.pt"), "labels out of range"},
      {"--model-file " + module("bn_dropout_cnn.pt") + " --model cnn", "give --model or --model-file, not both"},
      {"--model cnn --model-returns loss", "--model-returns loss applies to --model-file only"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flags);
    const std::string out = freshDir("own_model_bad");
    auto r = launch(0, out, "--check " + c.flags);
    EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_EQ(tl::testing::countOccurrences(r.err, "\n"), 1) << r.err;
  }
  // A real launch refuses before its first step.
  const std::string out = freshDir("own_model_bad_launch");
  auto r = launch(2, out, "--model-file " + module("flat_mnist.pt") + " --steps 2");
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("flat_mnist.pt"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out + "/summary.json"));
}

}  // namespace
