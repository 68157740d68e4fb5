// --model-file end to end: TorchScript modules exported by the system PyTorch
// (own_models.py), trained by tl-launch under real mpirun on synthetic CIFAR-format data.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.h"

namespace {

using tl::testing::CommandResult;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gData, gModels, gTokens;
bool gNoTorch = false;

std::string script() { return std::string(TL_SOURCE_DIR) + "/tests/launcher/own_models.py"; }

class OwnModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    gData = tl::testing::makeSyntheticCifar("own_model_data", 256, 64, 1, &error);
    ASSERT_EQ(error, "");
    gTokens = freshDir("own_model_tokens");
    auto t = runCommand(std::string(TL_DATA_BIN) + " tokens-synth --out " + gTokens + " --train 2000 --val 200 --vocab 32",
                        60, gTokens);
    ASSERT_EQ(t.exitCode, 0) << t.err;
    gModels = freshDir("own_model_modules");
    auto r = runCommand(std::string(TL_TORCH_PYTHON) + " " + script() + " export " + gModels, 300, gModels);
    gNoTorch = r.exitCode == 77;
    ASSERT_TRUE(r.exitCode == 0 || gNoTorch) << r.out << r.err;
  }

  void SetUp() override {
    if (gNoTorch) GTEST_SKIP() << TL_TORCH_PYTHON << " has no torch: cannot export TorchScript modules";
  }

  static std::string module(const std::string& name) { return gModels + "/" + name; }

  // tl-launch on the synthetic data; `np` 0: without mpirun (for --check).
  static CommandResult launch(int np, const std::string& out, const std::string& flags) {
    const std::string cmd = (np > 0 ? tl::testing::mpirunPrefix(np) : std::string()) + TL_LAUNCH_BIN +
                            " --dataset cifar10 --data-dir " + gData +
                            " --batch 8 --log-every 0 --workers 1 --output-dir " + out + " " + flags;
    return runCommand(cmd, 300, out);
  }

  // tl-launch of a loss-returning module on the token data (32 ids, 8 per sample).
  static CommandResult launchTokens(int np, const std::string& out, const std::string& flags) {
    const std::string cmd = (np > 0 ? tl::testing::mpirunPrefix(np) : std::string()) + TL_LAUNCH_BIN +
                            " --dataset tokens --seq-len 8 --data-dir " + gTokens +
                            " --model-returns loss --batch 4 --log-every 0 --workers 1 --output-dir " + out + " " + flags;
    return runCommand(cmd, 300, out);
  }

  static std::string sha(const std::string& out) {
    return nlohmann::json::parse(slurp(out + "/summary.json")).at("params_sha256");
  }
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
                     gData + " --output-dir " + resumed + " --log-every 0 --model-file " + moved,
                 300, resumed);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(sha(resumed), shas[0]);
  // ...another module is refused, naming both hashes.
  const std::string other = freshDir("own_model_other");
  r = runCommand(std::string(TL_LAUNCH_BIN) + " --check --resume " + first + "/checkpoint --data-dir " + gData +
                     " --model-file " + module("other_cnn.pt"),
                 120, other);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--model-file sha256:"), std::string::npos) << r.err;
  EXPECT_EQ(tl::testing::countOccurrences(r.err, "sha256:"), 2) << r.err;
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
  auto r = launchTokens(2, out, "--model-file " + module("tiny_gpt.pt") + " --steps 4 --eval");
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
}

// Token ids the module cannot take: one line naming the module and the token file, exit 2,
// before any step.
TEST_F(OwnModel, TokenIdsBeyondTheModuleAreRefused) {
  const std::string out = freshDir("own_model_gpt_vocab");
  auto r = launchTokens(0, out, "--check --model-file " + module("gpt_vocab16.pt"));
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("gpt_vocab16.pt"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(gTokens + "/train.npy' holds token id 31"), std::string::npos) << r.err;
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
