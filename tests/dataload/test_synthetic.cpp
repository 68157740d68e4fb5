// Synthetic data and `tl-data synth`: the real CIFAR-10 layout, determinism, balance, CLI
// errors, and that a small CNN actually learns it.
#include <gtest/gtest.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <fstream>
#include <sys/wait.h>

#include "common/files.h"
#include "dataload/cifar10.h"
#include "dataload/loader.h"
#include "dataload/synthetic.h"
#include "dataload/transforms.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::freshDir;
using testing::inputErrorOf;

struct CommandResult {
  int status;
  std::string output;  // stdout and stderr
};

// Runs `tl-data ARGS` once per entry, all at the same time: each start of a libtorch-linked
// binary costs about a second, mostly spent waiting, so they overlap well.
std::vector<CommandResult> runTlData(const std::vector<std::string>& argLists) {
  const std::string dir = freshDir("runs");
  std::string script;
  for (size_t i = 0; i < argLists.size(); ++i) {
    const std::string base = joinPath(dir, std::to_string(i));
    script += "(" + std::string(TL_DATA_EXE) + " " + argLists[i] + " > " + base + ".out 2>&1; echo $? > " +
              base + ".status) & ";
  }
  script += "wait";
  EXPECT_EQ(std::system(script.c_str()), 0);
  std::vector<CommandResult> results;
  for (size_t i = 0; i < argLists.size(); ++i) {
    const std::string base = joinPath(dir, std::to_string(i));
    results.push_back({std::stoi(readFile(base + ".status")), readFile(base + ".out")});
  }
  return results;
}

CommandResult runTlData(const std::string& args) { return runTlData(std::vector<std::string>{args})[0]; }

TEST(SyntheticCli, WritesTheCifar10LayoutThatTheReaderOpens) {
  const std::string dir = joinPath(freshDir("synth"), "out");  // created by the tool
  CommandResult result = runTlData("synth --out " + dir + " --train 23 --test 7 --seed 5");
  ASSERT_EQ(result.status, 0) << result.output;
  // 23 images over five files: 5, 5, 5, 4, 4 records of 3073 bytes.
  const std::vector<int64_t> perFile = {5, 5, 5, 4, 4};
  for (int f = 0; f < 5; ++f) {
    const std::string path = joinPath(dir, "data_batch_" + std::to_string(f + 1) + ".bin");
    EXPECT_EQ(int64_t(readFile(path).size()), perFile[size_t(f)] * 3073) << path;
  }
  EXPECT_EQ(readFile(joinPath(dir, "test_batch.bin")).size(), 7u * 3073u);
  std::string meta = readFile(joinPath(dir, "batches.meta.txt"));
  EXPECT_EQ(std::count(meta.begin(), meta.end(), '\n'), 10);
  EXPECT_EQ(meta.substr(0, 9), "red-disc\n");

  auto train = openDataset("cifar10", dir, Split::Train);
  auto test = openDataset("cifar10", dir, Split::Test);
  EXPECT_EQ(train->size(), 23);
  EXPECT_EQ(test->size(), 7);
  // The files hold exactly the in-memory generator's images and labels.
  SyntheticOptions options{23, 7, 5, 10};
  auto memory = makeSyntheticCifar(options, Split::Train);
  std::vector<uint8_t> scratch;
  for (int64_t i = 0; i < 23; ++i) {
    ASSERT_EQ(train->label(i), memory->label(i));
    ASSERT_EQ(std::memcmp(train->image(i, scratch).pixels, memory->image(i, scratch).pixels, 3072), 0);
  }
}

TEST(SyntheticCli, BadFlagsExitWithStatusTwoAndOneMessage) {
  struct Case {
    std::string args, message;
  };
  const std::string out = freshDir("bad");
  const std::vector<Case> cases = {
      {"synth --out " + out + " --train 12x --test 3", "--train expects a whole number from 1 to 10000000, got '12x'"},
      {"synth --out " + out + " --train 5 --test 3 --colour red", "unknown flag '--colour'"},
      {"synth --out " + out + " --train 5", "needs --test"},
      {"synth --out " + out + " --train 5 --test 2 --classes 11", "--classes expects a whole number from 2 to 10"},
      {"synth --out " + out + " --train 5 --train 6 --test 2", "--train is given twice"},
      {"shuffle", "unknown command 'shuffle'"},
  };
  std::vector<std::string> argLists;
  for (const Case& c : cases) argLists.push_back(c.args);
  argLists.push_back("--help");
  std::vector<CommandResult> results = runTlData(argLists);
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(results[i].status, 2) << cases[i].args;
    expectContains(results[i].output, {"tl-data: error: ", cases[i].message});
    EXPECT_EQ(std::count(results[i].output.begin(), results[i].output.end(), '\n'), 1) << results[i].output;
  }
  const CommandResult& help = results.back();
  EXPECT_EQ(help.status, 0);
  expectContains(help.output, {"tl-data synth --out DIR --train N --test M"});
}

TEST(Synthetic, DeterministicBalancedAndSeedDependent) {
  SyntheticOptions options{200, 10, 3, 10};
  auto a = makeSyntheticCifar(options, Split::Train);
  auto b = makeSyntheticCifar(options, Split::Train);
  EXPECT_EQ(a->pixels(), b->pixels());
  EXPECT_EQ(a->labels(), b->labels());
  options.seed = 4;
  EXPECT_NE(makeSyntheticCifar(options, Split::Train)->pixels(), a->pixels());
  // More images leave the first ones unchanged: image i depends on (seed, split, i) and the
  // label shuffle only.
  std::vector<int64_t> counts(10, 0);
  for (int64_t label : a->labels()) ++counts[size_t(label)];
  for (int64_t count : counts) EXPECT_EQ(count, 20);
  EXPECT_NE(makeSyntheticCifar(SyntheticOptions{200, 200, 3, 10}, Split::Test)->pixels(), a->pixels());

  expectContains(inputErrorOf([] { makeSyntheticCifar(SyntheticOptions{5, 5, 0, 1}, Split::Train); }),
                 {"2 to 10 classes", "got 1"});
  expectContains(inputErrorOf([&] { writeSyntheticCifar10(SyntheticOptions{0, 5, 0, 10}, freshDir("x")); }),
                 {"at least one training and one test image"});
}

// A small CNN: the data must be learnable within a few dozen steps, since end-to-end tests
// assert that the loss falls.
struct SmallCnnImpl : torch::nn::Module {
  SmallCnnImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)))),
        fc(register_module("fc", torch::nn::Linear(32 * 8 * 8, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    return fc->forward(x.flatten(1));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc;
};
TORCH_MODULE(SmallCnn);

TEST(Synthetic, ASmallCnnLearnsItInAFewDozenSteps) {
  torch::manual_seed(0);
  SyntheticOptions options{2000, 500, 1, 10};
  std::shared_ptr<const Dataset> train = makeSyntheticCifar(options, Split::Train);
  std::shared_ptr<const Dataset> test = makeSyntheticCifar(options, Split::Test);
  auto pipeline = std::make_shared<SamplePipeline>(train, makeCropFlipNormalize(cifarAugmentation()), 1);
  auto stream = std::make_shared<BatchStream>(DistributedSampler(SamplerOptions{2000, 1, 0, 1, true, false}), 64, true);
  Loader loader(pipeline, [stream] { return std::optional<BatchRequest>(stream->next()); }, LoaderOptions{2, 2, 8});

  SmallCnn model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const int steps = 40;
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    Batch batch = *loader.next();
    optimizer.zero_grad();
    torch::Tensor loss = torch::cross_entropy_loss(model->forward(batch.images), batch.labels);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  const double first = (losses[0] + losses[1] + losses[2]) / 3;
  const double last = (losses[steps - 1] + losses[steps - 2] + losses[steps - 3]) / 3;
  EXPECT_GT(first, 2.0);       // chance level is ln(10) = 2.3
  EXPECT_LT(last, first / 2);  // and it learned

  // Held-out accuracy far above chance (10%).
  torch::NoGradGuard noGrad;
  SamplePipeline eval(test, makeNormalize(cifarNormalization()), 0);
  torch::Tensor images = torch::empty({500, 3, 32, 32});
  torch::Tensor labels = torch::empty({500}, torch::kLong);
  std::vector<uint8_t> scratch;
  for (int64_t i = 0; i < 500; ++i) {
    labels[i] = eval.load(0, i, images.data_ptr<float>() + i * 3072, scratch);
  }
  const double accuracy = model->forward(images).argmax(1).eq(labels).to(torch::kDouble).mean().item<double>();
  EXPECT_GT(accuracy, 0.6) << "loss " << first << " -> " << last;
  std::cout << "[ small CNN ] loss " << first << " -> " << last << " in " << steps
            << " steps, held-out accuracy " << accuracy << "\n";
}

}  // namespace
}  // namespace tl::data
