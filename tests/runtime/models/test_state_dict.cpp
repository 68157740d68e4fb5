// stateDict order and names (PyTorch's state_dict), and the torch.save-format files.
#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <cstdlib>
#include <filesystem>

#include "common/check.h"
#include "common/files.h"
#include "runtime/models/model.h"
#include "runtime/models/state_dict_io.h"

namespace tl::models {
namespace {

std::vector<std::string> names(const torch::nn::Module& module) {
  std::vector<std::string> out;
  for (const auto& entry : stateDict(module)) out.push_back(entry.first);
  return out;
}

std::string tmpPath(const std::string& name) {
  const char* base = std::getenv("TL_TEST_TMP");
  auto dir = std::filesystem::path(base ? base : "/tmp") / "test_state_dict";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

ModelConfig cnn() {
  ModelConfig c;
  c.arch = "cnn";
  c.inChannels = 1;
  c.imageSize = 28;
  return c;
}

ModelConfig resnet20() {
  ModelConfig c;
  c.arch = "resnet";
  c.depth = 20;
  return c;
}

TEST(StateDict, SmallCnnInPyTorchOrder) {
  const std::vector<std::string> bn = {"weight", "bias", "running_mean", "running_var",
                                       "num_batches_tracked"};
  std::vector<std::string> expected = {"conv1.weight"};
  for (const auto& n : bn) expected.push_back("bn1." + n);
  expected.push_back("conv2.weight");
  for (const auto& n : bn) expected.push_back("bn2." + n);
  for (const auto& n : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) expected.push_back(n);
  EXPECT_EQ(names(*createModel(cnn())), expected);
}

TEST(StateDict, ResNetBlocksAndShortcuts) {
  const auto r20 = names(*createModel(resnet20()));
  // 1 stem conv + 9 blocks x 2 convs, 19 BNs x 5 entries, linear weight and bias.
  EXPECT_EQ(r20.size(), 19u + 19u * 5 + 2);
  EXPECT_EQ(r20[0], "conv1.weight");
  EXPECT_EQ(r20[1], "bn1.weight");
  EXPECT_EQ(r20[6], "layer1.0.conv1.weight");
  EXPECT_EQ(r20[7], "layer1.0.bn1.weight");
  EXPECT_EQ(r20.back(), "linear.bias");
  for (const auto& n : r20) EXPECT_EQ(n.find("shortcut"), std::string::npos) << n;  // option A

  ModelConfig c;
  c.arch = "resnet18";
  const auto r18 = names(*createModel(c));
  const auto at = [&](const std::string& n) {
    return std::find(r18.begin(), r18.end(), n) - r18.begin();
  };
  ASSERT_LT(at("layer2.0.shortcut.0.weight"), int64_t(r18.size()));
  EXPECT_EQ(at("layer2.0.shortcut.1.weight"), at("layer2.0.shortcut.0.weight") + 1);
  EXPECT_EQ(at("layer2.0.shortcut.0.weight"), at("layer2.0.bn2.num_batches_tracked") + 1);
  EXPECT_EQ(at("layer1.0.shortcut.0.weight"), int64_t(r18.size()));  // identity: no shortcut
  EXPECT_EQ(r18.back(), "linear.bias");
}

TEST(StateDict, TensorsAreTheModelsOwn) {
  auto model = createModel(cnn());
  auto state = stateDict(*model);
  torch::NoGradGuard noGrad;
  state.front().second.fill_(0.5);
  EXPECT_TRUE(model->named_parameters()["conv1.weight"].eq(0.5).all().item<bool>());
}

TEST(StateDictFile, RoundTripRestoresEveryTensor) {
  torch::manual_seed(3);
  auto source = createModel(resnet20());
  source->forward(torch::randn({4, 3, 32, 32}));  // BN running stats and counters move
  const auto path = tmpPath("resnet20.pt");
  saveStateDict(*source, path);
  torch::manual_seed(4);
  auto target = createModel(resnet20());
  loadStateDict(*target, path);
  const auto a = stateDict(*source), b = stateDict(*target);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].second.equal(b[i].second)) << a[i].first;
}

void expectLoadError(torch::nn::Module& model, const std::string& path,
                     const std::string& mention) {
  try {
    loadStateDict(model, path);
    ADD_FAILURE() << "loaded; expected an InputError mentioning '" << mention << "'";
  } catch (const tl::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

TEST(StateDictFile, MismatchesAreInputErrorsAndLeaveTheModelAlone) {
  auto model = createModel(cnn());
  const auto before = stateDict(*model)[0].second.clone();

  auto other = cnn();
  other.inChannels = 3;
  other.imageSize = 32;
  const auto wrongShape = tmpPath("cnn3x32.pt");
  saveStateDict(*createModel(other), wrongShape);
  expectLoadError(*model, wrongShape,
                  "'conv1.weight' has shape [32, 3, 3, 3], the model expects [32, 1, 3, 3]");

  const auto wrongModel = tmpPath("resnet20_for_cnn.pt");
  saveStateDict(*createModel(resnet20()), wrongModel);
  expectLoadError(*model, wrongModel, "lacks 'conv2.weight'");

  const auto garbage = tmpPath("garbage.pt");
  writeFileAtomic(garbage, "not a zip file at all");
  expectLoadError(*model, garbage, "is not a readable torch.save file");
  expectLoadError(*model, tmpPath("missing.pt"), "missing.pt");

  EXPECT_TRUE(stateDict(*model)[0].second.equal(before));
}

TEST(StateDictFile, UnwritablePathIsAnInputError) {
  const auto file = tmpPath("plain-file");
  writeFileAtomic(file, "x");
  EXPECT_THROW(saveStateDict(*createModel(cnn()), file + "/below-a-file.pt"), tl::InputError);
}

}  // namespace
}  // namespace tl::models
