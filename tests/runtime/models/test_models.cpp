// Architectures: output shapes, parameter counts, seeded initialisation and config validation.
#include <gtest/gtest.h>

#include <torch/types.h>
#include <torch/utils.h>

#include "common/check.h"
#include "runtime/models/model.h"

namespace tl::models {
namespace {

ModelConfig config(const std::string& arch, int inChannels = 3, int imageSize = 32) {
  ModelConfig c;
  c.arch = arch;
  c.inChannels = inChannels;
  c.imageSize = imageSize;
  if (arch == "resnet") c.depth = 20;
  return c;
}

struct ShapeCase {
  std::string arch;
  int inChannels, imageSize;
};

class OutputShape : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(OutputShape, LogitsForEveryImageInTrainAndEval) {
  const auto& p = GetParam();
  torch::manual_seed(0);
  auto c = config(p.arch, p.inChannels, p.imageSize);
  c.numClasses = 7;
  auto model = createModel(c);
  auto x = torch::randn({2, p.inChannels, p.imageSize, p.imageSize});
  auto train = model->forward(x);
  EXPECT_EQ(train.sizes(), (std::vector<int64_t>{2, 7}));
  train.sum().backward();
  for (const auto& parameter : model->parameters()) ASSERT_TRUE(parameter.grad().defined());
  model->eval();
  torch::NoGradGuard noGrad;
  EXPECT_EQ(model->forward(x).sizes(), (std::vector<int64_t>{2, 7}));
}

INSTANTIATE_TEST_SUITE_P(
    CifarAndMnist, OutputShape,
    ::testing::Values(ShapeCase{"cnn", 3, 32}, ShapeCase{"cnn", 1, 28}, ShapeCase{"mlp", 3, 32},
                      ShapeCase{"mlp", 1, 28}, ShapeCase{"resnet", 3, 32},
                      ShapeCase{"resnet", 1, 28}, ShapeCase{"resnet18", 3, 32},
                      ShapeCase{"resnet18", 1, 28}, ShapeCase{"shufflenetv2", 3, 32},
                      ShapeCase{"shufflenetv2", 1, 28}),
    [](const auto& info) {
      return info.param.arch + "_" + std::to_string(info.param.inChannels) + "x" +
             std::to_string(info.param.imageSize);
    });

TEST(ParameterCount, ResNet18MatchesKuangliu) {
  EXPECT_EQ(countParameters(*createModel(config("resnet18"))), 11173962);
}

TEST(ParameterCount, CifarResNetsWithOptionAShortcuts) {
  // He et al. 2016, table 6: 0.27M, 0.46M, 0.66M, 0.85M, 1.7M; exact counts for option A,
  // identical to the PyTorch reference definition in pytorch_parity.py.
  const std::pair<int, int64_t> expected[] = {
      {20, 269722}, {32, 464154}, {44, 658586}, {56, 853018}, {110, 1727962}};
  for (const auto& [depth, count] : expected) {
    auto c = config("resnet");
    c.depth = depth;
    EXPECT_EQ(countParameters(*createModel(c)), count) << "depth " << depth;
  }
}

TEST(ParameterCount, OtherArchitectures) {
  EXPECT_EQ(countParameters(*createModel(config("shufflenetv2"))), 1263854);
  // conv1 1*32*9, bn1 2*32, conv2 32*64*9, bn2 2*64, fc1 3136*128+128, fc2 128*10+10.
  EXPECT_EQ(countParameters(*createModel(config("cnn", 1, 28))),
            288 + 64 + 18432 + 128 + 3136 * 128 + 128 + 1290);
  // Without BatchNorm the convolutions get a bias instead: 32 + 64 more, 64 + 128 fewer.
  auto noBn = config("cnn", 1, 28);
  noBn.batchNorm = false;
  EXPECT_EQ(countParameters(*createModel(noBn)), 288 + 32 + 18432 + 64 + 3136 * 128 + 128 + 1290);
  // mlp default hidden sizes 256, 128 on 3x32x32.
  EXPECT_EQ(countParameters(*createModel(config("mlp"))),
            3072 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
}

TEST(Initialisation, SameSeedSameParametersOtherSeedOthers) {
  for (const auto& arch : modelNames()) {
    torch::manual_seed(42);
    auto a = createModel(config(arch));
    torch::manual_seed(42);
    auto b = createModel(config(arch));
    torch::manual_seed(43);
    auto c = createModel(config(arch));
    auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
    bool anyDifferent = false;
    for (size_t i = 0; i < pa.size(); ++i) {
      EXPECT_TRUE(pa[i].equal(pb[i])) << arch << " parameter " << i;
      anyDifferent = anyDifferent || !pa[i].equal(pc[i]);
    }
    EXPECT_TRUE(anyDifferent) << arch;
  }
}

TEST(Dropout, ActiveInTrainingOnlyAndSeeded) {
  auto c = config("cnn", 1, 28);
  c.dropout = 0.5;
  torch::manual_seed(1);
  auto model = createModel(c);
  auto x = torch::randn({4, 1, 28, 28});
  model->eval();
  auto e1 = model->forward(x), e2 = model->forward(x);
  EXPECT_TRUE(e1.equal(e2));
  model->train();
  torch::manual_seed(5);
  auto t1 = model->forward(x);
  torch::manual_seed(5);
  auto t2 = model->forward(x);
  auto t3 = model->forward(x);
  EXPECT_TRUE(t1.equal(t2));   // the same generator state gives the same mask
  EXPECT_FALSE(t1.equal(t3));  // and the mask changes as the generator advances
}

TEST(NoBatchNorm, ResNetsAndCnnHaveNoNormLayers) {
  for (const std::string arch : {"cnn", "resnet", "resnet18"}) {
    auto c = config(arch);
    c.batchNorm = false;
    auto model = createModel(c);
    for (const auto& [name, tensor] : stateDict(*model)) {
      EXPECT_EQ(name.find("bn"), std::string::npos) << arch << ": " << name;
      EXPECT_EQ(name.find("running_"), std::string::npos) << arch << ": " << name;
    }
    EXPECT_EQ(model->forward(torch::randn({2, 3, 32, 32})).size(1), 10);
  }
}

void expectRejected(const ModelConfig& c, const std::string& mention) {
  try {
    createModel(c);
    ADD_FAILURE() << c.arch << ": accepted; expected an InputError mentioning '" << mention << "'";
  } catch (const tl::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

TEST(Validation, ClearInputErrors) {
  expectRejected(config("vgg16"),
                 "unknown model 'vgg16'; choose one of: cnn, mlp, resnet, resnet18, shufflenetv2");
  auto c = config("resnet");
  c.depth = 21;
  expectRejected(c, "depth 21 is not of the form 6n+2");
  c.depth = 0;
  expectRejected(c, "depth 0 is not of the form 6n+2");
  c = config("resnet18");
  c.depth = 18;
  expectRejected(c, "--depth applies only to --model resnet");
  c = config("shufflenetv2");
  c.batchNorm = false;
  expectRejected(c, "--no-batchnorm is not available for --model shufflenetv2");
  c = config("mlp");
  c.batchNorm = false;
  expectRejected(c, "--no-batchnorm is not available for --model mlp");
  c = config("resnet18");
  c.dropout = 0.3;
  expectRejected(c, "--dropout applies only to --model cnn and mlp");
  c = config("cnn");
  c.dropout = 1.0;
  expectRejected(c, "--dropout must be in [0, 1)");
  c = config("cnn", 1, 3);
  expectRejected(c, "needs images of at least 4x4");
  c = config("cnn");
  c.hiddenSizes = {64};
  expectRejected(c, "hidden layer sizes apply only to --model mlp");
  c = config("mlp");
  c.numClasses = 0;
  expectRejected(c, "--num-classes must be >= 1");
}

TEST(Validation, ResNetDepthsOfTheForm6nPlus2AreAccepted) {
  for (int depth : {8, 14, 20, 32, 44, 56, 110}) {
    auto c = config("resnet");
    c.depth = depth;
    EXPECT_NO_THROW(validate(c)) << depth;
  }
}

}  // namespace
}  // namespace tl::models
