// A replayed step (exact reduction) must compute exactly what its first pass computed: every
// generator the EST draws from (the CPU one and, on a GPU, the device's) goes back to its state
// at the step's start. Checked with the CNN, whose dropout draws from the device's generator.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include "est/est_context.h"
#include "runtime/models/model.h"
#include "runtime/train/step.h"

namespace tl::est {
namespace {

std::vector<at::Tensor> gradientsOf(models::Model& model, const at::Tensor& images, const at::Tensor& labels) {
  train::forwardBackward(model, images, labels);
  std::vector<at::Tensor> out;
  for (const auto& g : train::gradients(model)) out.push_back(g.detach().to(at::kCPU).clone());
  return out;
}

bool sameBits(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!at::equal(a[i], b[i])) return false;
  }
  return true;
}

void expectReplayRepeatsFirstPass(c10::Device device) {
  at::manual_seed(7);
  models::ModelConfig mc;
  mc.arch = "cnn";  // BatchNorm + dropout 0.25
  auto model = models::createModel(mc);
  model->to(device);
  model->train();
  const at::Tensor images = at::randn({8, 3, 32, 32}).to(device);
  const at::Tensor labels = at::randint(0, 10, {8}, at::kLong).to(device);

  const GeneratorStates atStepStart = GeneratorStates::capture(device);
  const auto firstPass = gradientsOf(*model, images, labels);
  // Without reinstalling the generators the masks differ: dropout is live, so the check below
  // can fail.
  const auto freshDraws = gradientsOf(*model, images, labels);
  ASSERT_FALSE(sameBits(firstPass, freshDraws));
  atStepStart.install(device);
  const auto replay = gradientsOf(*model, images, labels);
  EXPECT_TRUE(sameBits(firstPass, replay));
}

TEST(ReplayGenerators, CpuReplayDrawsTheSameDropoutMasks) {
  expectReplayRepeatsFirstPass(c10::Device(c10::kCPU));
}

TEST(ReplayGenerators, CudaReplayDrawsTheSameDropoutMasks) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU on this machine";
  expectReplayRepeatsFirstPass(c10::Device(c10::kCUDA, 0));
}

TEST(ReplayGenerators, CpuStatesHoldNoDeviceGenerator) {
  const auto states = GeneratorStates::capture(c10::Device(c10::kCPU));
  EXPECT_TRUE(states.cpu.defined());
  EXPECT_FALSE(states.device.defined());
}

TEST(ReplayGenerators, CudaStatesHoldTheDeviceGenerator) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU on this machine";
  const auto states = GeneratorStates::capture(c10::Device(c10::kCUDA, 0));
  EXPECT_TRUE(states.cpu.defined());
  EXPECT_TRUE(states.device.defined());
}

}  // namespace
}  // namespace tl::est
