// TorchScript models (runtime/models/torchscript_model.h) against the modules that
// tests/launcher/own_models.py exports with the system PyTorch: state in PyTorch's order,
// the same bits as the built-in cnn, train/eval, the loss modes, the checks and the refusals.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

#include <cstdlib>
#include <filesystem>

#include "common/check.h"
#include "common/files.h"
#include "common/sha256.h"
#include "dataload/memory_dataset.h"
#include "dataload/transforms.h"
#include "runtime/models/model.h"
#include "runtime/models/model_names.h"
#include "runtime/models/torchscript_model.h"
#include "runtime/train/model_check.h"
#include "runtime/train/model_loss.h"
#include "runtime/train/step.h"

namespace {

using tl::models::ModelConfig;

std::string gDir;
bool gNoTorch = false;

class TorchScriptModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gDir = (std::filesystem::temp_directory_path() / ("tl-torchscript-" + std::to_string(::getpid()))).string();
    const std::string cmd = std::string(TL_TORCH_PYTHON) + " " + TL_SOURCE_DIR +
                            "/tests/launcher/own_models.py export " + gDir + " > /dev/null";
    const int status = std::system(cmd.c_str());
    gNoTorch = WIFEXITED(status) && WEXITSTATUS(status) == 77;
    ASSERT_TRUE(status == 0 || gNoTorch) << cmd;
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(gDir); }
  void SetUp() override {
    if (gNoTorch) GTEST_SKIP() << "no torch in " << TL_TORCH_PYTHON;
  }

  static ModelConfig config(const std::string& name, bool returnsLoss = false) {
    ModelConfig c;
    c.arch = tl::models::kTorchScriptArch;
    c.file = gDir + "/" + name;
    c.returnsLoss = returnsLoss;
    return c;
  }

  static std::string errorOf(const ModelConfig& c) {
    try {
      tl::models::createModel(c);
    } catch (const tl::InputError& e) {
      return e.what();
    }
    return "(accepted)";
  }
};

std::vector<std::string> names(const torch::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, t] : tl::models::stateDict(m)) out.push_back(name);
  return out;
}

void expectSameState(const torch::nn::Module& a, const torch::nn::Module& b) {
  const auto sa = tl::models::stateDict(a), sb = tl::models::stateDict(b);
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    EXPECT_TRUE(sa[i].second.equal(sb[i].second)) << sa[i].first;
  }
}

TEST_F(TorchScriptModel, StateIsTheModulesInPyTorchOrder) {
  auto model = tl::models::createModel(config("bn_dropout_cnn.pt"));
  EXPECT_EQ(names(*model), (std::vector<std::string>{"conv.weight", "bn.weight", "bn.bias", "bn.running_mean",
                                                    "bn.running_var", "bn.num_batches_tracked", "fc.weight",
                                                    "fc.bias"}));
  EXPECT_EQ(model->parameters().size(), 5u);
  EXPECT_EQ(model->buffers().size(), 3u);
  EXPECT_NE(tl::models::forwardSignature(*model).find("forward("), std::string::npos);
}

// The built-in cnn exported with tl's initial weights (seed 7): same state, and a training step
// with dropout from the same generator state gives the same gradients and running stats.
TEST_F(TorchScriptModel, ExportedCnnStepsBitForBitLikeTheBuiltinOne) {
  ModelConfig cnn;
  cnn.arch = "cnn";
  torch::manual_seed(7);
  auto builtin = tl::models::createModel(cnn);
  auto scripted = tl::models::createModel(config("builtin_cnn_seed7.pt"));
  expectSameState(*builtin, *scripted);
  torch::manual_seed(1);
  const at::Tensor x = torch::randn({6, 3, 32, 32}), y = torch::randint(0, 10, {6});
  for (auto* m : {builtin.get(), scripted.get()}) {
    torch::manual_seed(42);  // the dropout masks
    tl::train::forwardBackward(*m, x, y);
  }
  expectSameState(*builtin, *scripted);  // BatchNorm running stats, updated in place
  const auto gb = tl::train::gradients(*builtin), gs = tl::train::gradients(*scripted);
  ASSERT_EQ(gb.size(), gs.size());
  for (size_t i = 0; i < gb.size(); ++i) EXPECT_TRUE(gb[i].equal(gs[i])) << i;
}

TEST_F(TorchScriptModel, TrainAndEvalReachTheModule) {
  auto model = tl::models::createModel(config("bn_dropout_cnn.pt"));
  const at::Tensor x = torch::randn({4, 3, 32, 32});
  torch::NoGradGuard noGrad;
  model->eval();
  EXPECT_TRUE(model->forward(x).equal(model->forward(x)));  // no dropout, running stats
  model->train();
  EXPECT_FALSE(model->forward(x).equal(model->forward(x)));  // dropout draws
}

TEST_F(TorchScriptModel, LossModes) {
  auto own = tl::models::createModel(config("returns_loss.pt", true));
  const at::Tensor x = torch::randn({4, 3, 32, 32}), y = torch::randint(0, 10, {4});
  const auto mean = tl::train::scoreBatch(*own, x, y, false);
  EXPECT_EQ(mean.loss.dim(), 0);
  EXPECT_FALSE(mean.logits.defined());
  auto cfg = config("bn_dropout_cnn.pt");
  cfg.loss = "mse";
  auto mse = tl::models::createModel(cfg);
  const auto scored = tl::train::scoreBatch(*mse, x, y, false);
  EXPECT_EQ(scored.loss.dim(), 0);
  EXPECT_FALSE(scored.logits.defined());
  cfg.loss = "nll";
  const auto nll = tl::train::scoreBatch(*tl::models::createModel(cfg), x, y, true);
  EXPECT_TRUE(nll.logits.defined());
}

TEST_F(TorchScriptModel, SavedTorchScriptHoldsTheTrainedState) {
  auto model = tl::models::createModel(config("bn_dropout_cnn.pt"));
  tl::train::forwardBackward(*model, torch::randn({4, 3, 32, 32}), torch::randint(0, 10, {4}));
  for (auto& p : model->parameters()) p.data().add_(p.grad());
  const std::string path = gDir + "/saved.pt";
  ASSERT_TRUE(tl::models::saveTorchScript(*model, path));
  ModelConfig again = config("saved.pt");
  again.file = path;
  expectSameState(*model, *tl::models::createModel(again));
  EXPECT_EQ(tl::models::torchScriptSavePath("out/m.pt"), "out/m.torchscript.pt");
  EXPECT_EQ(tl::models::torchScriptSavePath("out/m"), "out/m.torchscript.pt");
  ModelConfig cnn;
  cnn.arch = "cnn";
  EXPECT_FALSE(tl::models::saveTorchScript(*tl::models::createModel(cnn), path));
}

TEST_F(TorchScriptModel, BadFilesAreRefusedNamingThem) {
  EXPECT_NE(errorOf(config("state_dict.pt")).find("state_dict.pt' is not a TorchScript module"), std::string::npos);
  EXPECT_NE(errorOf(config("text.pt")).find("not a zip archive"), std::string::npos);
  EXPECT_NE(errorOf(config("truncated.pt")).find("truncated.pt' is not a TorchScript module"), std::string::npos);
  EXPECT_NE(errorOf(config("absent.pt")).find("no such file"), std::string::npos);
  EXPECT_NE(errorOf(config("no_parameters.pt")).find("no trainable parameters"), std::string::npos);
  ModelConfig changed = config("bn_dropout_cnn.pt");
  changed.fileSha256 = tl::models::fileSha256(gDir + "/other_cnn.pt", "--model-file");
  const std::string e = errorOf(changed);
  EXPECT_NE(e.find(changed.fileSha256), std::string::npos) << e;
  EXPECT_NE(e.find(tl::models::fileSha256(changed.file, "--model-file")), std::string::npos) << e;
}

// The job's module is named by its SHA-256 (64 hex digits, what summary.json and checkpoints
// record), not by its bytes; a checkpoint of an older tl recorded the bytes in hex, and the
// same module is still accepted against it (another is not).
TEST_F(TorchScriptModel, ModuleIsNamedByItsSha256) {
  const std::string path = gDir + "/bn_dropout_cnn.pt";
  const std::string bytes = tl::readFile(path);
  tl::Sha256 h;
  h.update(bytes.data(), bytes.size());
  const std::string sha = tl::models::fileSha256(path, "--model-file");
  EXPECT_EQ(sha, h.hexDigest());
  EXPECT_EQ(sha.size(), 64u);
  ModelConfig older = config("bn_dropout_cnn.pt");
  older.fileSha256 = tl::Sha256::hex(bytes.data(), bytes.size());
  EXPECT_NE(tl::models::createModel(older), nullptr);
  ModelConfig olderOther = config("bn_dropout_cnn.pt");
  const std::string other = tl::readFile(gDir + "/other_cnn.pt");
  olderOther.fileSha256 = tl::Sha256::hex(other.data(), other.size());
  const std::string e = errorOf(olderOther);
  EXPECT_NE(e.find("the module recorded by an older tl"), std::string::npos) << e;
  EXPECT_LT(e.size(), 1000u) << "the error names the module, it does not print it";
}

// The trial forward pass on the first samples of the data.
TEST_F(TorchScriptModel, TrialForwardChecksTheModuleAgainstTheData) {
  const tl::data::ImageShape shape{3, 32, 32};
  auto dataset = std::make_shared<const tl::data::InMemoryDataset>(
      "test", shape, 10, std::vector<uint8_t>(4 * shape.numel(), 100), std::vector<int64_t>{0, 9, 3, 4});
  std::shared_ptr<const tl::data::Transform> transform =
      tl::data::makeNormalize(tl::data::cifarNormalization());
  const tl::data::SamplePipeline data(dataset, transform, 1);
  auto check = [&](const ModelConfig& c) -> std::string {
    auto model = tl::models::createModel(c);
    try {
      tl::train::checkModelOnData(*model, c, data, c10::Device(c10::kCPU));
    } catch (const tl::InputError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  const auto before = at::detail::getDefaultCPUGenerator().get_state();
  EXPECT_EQ(check(config("bn_dropout_cnn.pt")), "(accepted)");
  EXPECT_TRUE(before.equal(at::detail::getDefaultCPUGenerator().get_state()));
  EXPECT_EQ(check(config("returns_loss.pt", true)), "(accepted)");
  EXPECT_NE(check(config("flat_mnist.pt")).find("does not accept the dataset's batch (inputs Float [2, 3, 32, 32])"),
            std::string::npos)
      << check(config("flat_mnist.pt"));
  EXPECT_NE(check(config("loss_per_sample.pt", true)).find("must return a scalar loss"), std::string::npos);
  EXPECT_NE(check(config("five_classes.pt")).find("labels out of range: the dataset has 10 classes"),
            std::string::npos);
}

}  // namespace
