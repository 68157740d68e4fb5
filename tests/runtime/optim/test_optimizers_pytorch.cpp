// tl's optimizers on float32 against torch.optim of PyTorch 1.13 on the CPU. The expected
// values were produced once with the system PyTorch (python3-torch 1.13.1, Debian) by
//   /usr/bin/python3 tests/runtime/optim/pytorch_reference_values.py
// which runs the scenario of optim_test_util.h (same parameter, gradients, lr per step and
// hyper-parameters as below) and prints the float32 parameter after each step. tl performs the
// same tensor ops in the same order on the same kernels, so the results are bit-identical.
#include <gtest/gtest.h>

#include <map>

#include "tests/runtime/optim/optim_test_util.h"

namespace tl::optim::testing {
namespace {

using FloatTrajectory = std::vector<std::vector<float>>;

// Output of pytorch_reference_values.py (python3-torch 1.13.1+dfsg-4, x86_64).
const std::map<std::string, FloatTrajectory> kPyTorchValues = {
{"sgd", {{0.9890000224113464f, -1.9780000448226929f, 2.9670000076293945f}, {1.0061049461364746f, -1.9852099418640137f, 2.9485647678375244f}, {1.0090757608413696f, -1.9925076961517334f, 2.9418554306030273f}}},
{"nesterov", {{0.9790999889373779f, -1.9581999778747559f, 2.937299966812134f}, {1.0212148427963257f, -1.9854296445846558f, 2.9163944721221924f}, {1.0191518068313599f, -1.9976805448532104f, 2.912137746810913f}}},
{"adagrad", {{0.9671458601951599f, -1.9428908824920654f, 2.9277987480163574f}, {1.0080288648605347f, -1.9776827096939087f, 2.9193382263183594f}, {0.9998533129692078f, -1.9854224920272827f, 2.923036575317383f}}},
{"adadelta", {{0.9968390464782715f, -1.996838092803955f, 2.996837854385376f}, {0.9990255832672119f, -1.99879789352417f, 2.9962844848632812f}, {0.9984018802642822f, -1.9993854761123657f, 2.996534824371338f}}},
{"adam", {{0.9900900721549988f, -1.9900453090667725f, 2.990030288696289f}, {0.9929790496826172f, -1.9915833473205566f, 2.985915422439575f}, {0.993394672870636f, -1.992737054824829f, 2.9846811294555664f}}},
{"adamw", {{0.9890000224113464f, -1.9880000352859497f, 2.986999988555908f}, {0.991497278213501f, -1.988836407661438f, 2.9815897941589355f}, {0.9917424321174622f, -1.9896372556686401f, 2.979905843734741f}}},
};

// The hyper-parameters of pytorch_reference_values.py, case by case.
OptimizerOptions referenceOptions(const std::string& name) {
  OptimizerOptions o;
  o.name = name;
  if (name == "sgd" || name == "nesterov") {
    o.lr = 0.1;
    o.momentum = 0.9;
    o.dampening = name == "sgd" ? 0.1 : 0.0;
    o.weightDecay = 0.01;
  } else if (name == "adagrad") {
    o.lr = 0.1;
    o.lrDecay = 0.01;
    o.weightDecay = 0.01;
    o.initialAccumulator = 0.1;
    o.eps = 1e-10;
  } else if (name == "adadelta") {
    o.lr = 1.0;
    o.rho = 0.9;
    o.eps = 1e-6;
    o.weightDecay = 0.01;
  } else {
    o.lr = 0.01;
    // adam with a large eps, so that float32 results show where eps is added.
    o.eps = name == "adam" ? 1e-3 : 1e-8;
    o.weightDecay = name == "adamw" ? 0.1 : 0.01;
  }
  return o;
}

class MatchesPyTorch : public ::testing::TestWithParam<std::string> {};

TEST_P(MatchesPyTorch, ThreeStepsBitForBit) {
  const auto& expected = kPyTorchValues.at(GetParam());
  const auto actual = runScenario(referenceOptions(GetParam()), torch::kFloat);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k)
    for (size_t i = 0; i < expected[k].size(); ++i)
      EXPECT_EQ(float(actual[k][i]), expected[k][i]) << "step " << k + 1 << " element " << i;
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, MatchesPyTorch,
                         ::testing::Values("sgd", "nesterov", "adagrad", "adadelta", "adam",
                                           "adamw"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tl::optim::testing
