#include <gtest/gtest.h>

#include "common/check.h"
#include "launcher/launch_options.h"

namespace {

using tl::launcher::parseLaunchOptions;

std::string errorOf(const std::vector<std::string>& args) {
  try {
    parseLaunchOptions(args);
  } catch (const tl::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Flags, ParsesValuesInBothForms) {
  auto o = parseLaunchOptions({"--model", "resnet", "--depth=20", "--batch", "16", "--lr=0.2",
                               "--eval", "--dataset", "cifar10", "--data-dir", "/d", "--steps", "7"});
  EXPECT_EQ(o.job.model.arch, "resnet");
  EXPECT_EQ(o.job.model.depth, 20);
  EXPECT_EQ(o.job.batch, 16);
  EXPECT_DOUBLE_EQ(o.job.optimizer.lr, 0.2);
  EXPECT_TRUE(o.job.eval);
  EXPECT_EQ(o.job.steps, 7);
  EXPECT_EQ(o.job.epochs, 0);
}

TEST(Flags, DefaultsToOneEpochOfFashionMnist) {
  auto o = parseLaunchOptions({});
  EXPECT_EQ(o.job.epochs, 1);
  EXPECT_EQ(o.job.dataset, "fashion-mnist");
  EXPECT_EQ(o.job.dataDir, tl::launcher::kFashionMnistDir);
}

TEST(Flags, AutoWorkersAndSimulatedDevice) {
  auto o = parseLaunchOptions({"--workers", "auto", "--device", "sim:2500"});
  EXPECT_TRUE(o.job.autoWorkers);
  EXPECT_EQ(o.job.workers, 1);
  EXPECT_TRUE(o.job.device.isSimulated());
  EXPECT_DOUBLE_EQ(o.job.device.simRate, 2500.0);
  EXPECT_EQ(o.job.device.toString(), "sim:2500");
  EXPECT_FALSE(parseLaunchOptions({"--workers", "3"}).job.autoWorkers);
}

// The deadline of collectives is a run setting: ten minutes unless the launch says otherwise.
TEST(Flags, CollectiveTimeoutInSeconds) {
  EXPECT_EQ(tl::collectiveTimeout(parseLaunchOptions({}).job), std::chrono::minutes(10));
  EXPECT_EQ(tl::collectiveTimeout(parseLaunchOptions({"--collective-timeout", "2.5"}).job),
            std::chrono::milliseconds(2500));
  EXPECT_NE(errorOf({"--collective-timeout", "0"}).find("--collective-timeout: must be between 0.1"),
            std::string::npos);
}

TEST(Flags, GpuCommDefaultsToNcclAndAcceptsMpi) {
  EXPECT_EQ(parseLaunchOptions({}).gpuComm, "nccl");
  EXPECT_EQ(parseLaunchOptions({"--device", "cuda", "--gpu-comm", "mpi"}).gpuComm, "mpi");
  EXPECT_NE(errorOf({"--gpu-comm", "gloo"}).find("--gpu-comm: unknown value 'gloo'"), std::string::npos);
}

TEST(Flags, HelpIsNotAnError) {
  auto o = parseLaunchOptions({"--help"});
  EXPECT_TRUE(o.help);
  EXPECT_NE(o.usage.find("--compute-threads"), std::string::npos);
}

TEST(Flags, BadInputNamesTheFlag) {
  EXPECT_NE(errorOf({"--bogus", "1"}).find("unknown flag '--bogus'"), std::string::npos);
  EXPECT_NE(errorOf({"--batch", "0"}).find("--batch: must be at least 1, got 0"), std::string::npos);
  EXPECT_NE(errorOf({"--batch", "abc"}).find("--batch: expected an integer, got 'abc'"), std::string::npos);
  EXPECT_NE(errorOf({"--model", "vgg"}).find("--model: unknown value 'vgg'"), std::string::npos);
  EXPECT_NE(errorOf({"--lr"}).find("--lr: missing value"), std::string::npos);
  EXPECT_NE(errorOf({"--epochs", "1", "--steps", "3"}).find("not both"), std::string::npos);
  EXPECT_NE(errorOf({"--model", "resnet"}).find("--depth"), std::string::npos);
  EXPECT_NE(errorOf({"--device", "tpu"}).find("--device: unknown device 'tpu'"), std::string::npos);
  EXPECT_NE(errorOf({"--device", "sim:fast"}).find("--device sim:fast: RATE must be a positive number"),
            std::string::npos);
  EXPECT_NE(errorOf({"--workers", "many"}).find("--workers: expected an integer, got 'many'"), std::string::npos);
  EXPECT_NE(errorOf({"--workers", "300"}).find("--workers: must be between 0 and 256 or 'auto'"), std::string::npos);
  EXPECT_NE(errorOf({"--eval", "--eval"}).find("--eval is given twice"), std::string::npos);
  EXPECT_NE(errorOf({"--eval=1"}).find("--eval: takes no value"), std::string::npos);
  EXPECT_EQ(parseLaunchOptions({"--dropout", "-1"}).job.model.dropout, -1);  // a value, not a flag
  EXPECT_NE(errorOf({"stray"}).find("unexpected argument 'stray'"), std::string::npos);
}

TEST(Flags, Placement) {
  EXPECT_EQ(parseLaunchOptions({"--placement", "2,1,1"}).placement, (std::vector<int64_t>{2, 1, 1}));
  for (const char* bad : {"2,,1", "2,1,", "two"}) {
    EXPECT_NE(errorOf({"--placement", bad}).find("--placement"), std::string::npos) << bad;
  }
}

}  // namespace

TEST(Flags, AdamBetasMustBeBelowOne) {
  // PyTorch refuses beta = 1: Adam's bias correction divides by 1 - beta^t.
  for (const char* flag : {"--beta1", "--beta2"}) {
    EXPECT_NE(errorOf({flag, "1"}).find(std::string(flag) + ": must be below 1"), std::string::npos) << flag;
    EXPECT_NO_THROW(parseLaunchOptions({flag, "0.999"}));
  }
}
