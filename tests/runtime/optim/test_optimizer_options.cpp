// createOptimizer rejects hyper-parameters PyTorch rejects, and options that do not apply to
// the chosen optimizer, with an InputError naming the flag.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "common/check.h"
#include "tests/runtime/optim/optim_test_util.h"

namespace tl::optim::testing {
namespace {

void expectRejected(const std::string& name, const std::function<void(OptimizerOptions&)>& edit,
                    const std::string& mention) {
  OptimizerOptions o;
  o.name = name;
  edit(o);
  try {
    createOptimizer(o, {torch::zeros({2}, torch::requires_grad())});
    ADD_FAILURE() << name << ": accepted; expected an InputError mentioning '" << mention << "'";
  } catch (const tl::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

TEST(OptimizerOptions, UnknownNameListsTheChoices) {
  expectRejected("lamb", [](auto&) {}, "unknown optimizer 'lamb'; choose one of: adadelta, adagrad");
}

TEST(OptimizerOptions, RejectsOutOfRangeValues) {
  expectRejected("sgd", [](auto& o) { o.lr = -0.1; }, "--lr must be >= 0 (got -0.1)");
  expectRejected("adam", [](auto& o) { o.lr = std::nan(""); }, "--lr");
  expectRejected("sgd", [](auto& o) { o.momentum = -0.5; }, "--momentum must be >= 0");
  expectRejected("sgd", [](auto& o) { o.weightDecay = -1e-4; }, "--weight-decay");
  expectRejected("sgd", [](auto& o) { o.dampening = 1.5; }, "--dampening must be in [0, 1]");
  expectRejected("adam", [](auto& o) { o.beta1 = 1.0; }, "--beta1 must be in [0, 1) (got 1)");
  expectRejected("adamw", [](auto& o) { o.beta2 = -0.1; }, "--beta2");
  expectRejected("adam", [](auto& o) { o.eps = std::numeric_limits<double>::infinity(); }, "--eps");
  expectRejected("adadelta", [](auto& o) { o.rho = 1.1; }, "--rho must be in [0, 1]");
  expectRejected("adagrad", [](auto& o) { o.lrDecay = -1; }, "--lr-decay");
  expectRejected("adagrad", [](auto& o) { o.initialAccumulator = -1; }, "--initial-accumulator");
}

TEST(OptimizerOptions, NesterovNeedsMomentumAndNoDampening) {
  expectRejected("nesterov", [](auto& o) { o.momentum = 0; }, "needs --momentum > 0");
  expectRejected("nesterov", [](auto& o) {
    o.momentum = 0.9;
    o.dampening = 0.1;
  }, "--dampening 0");
}

TEST(OptimizerOptions, RejectsOptionsOfOtherOptimizers) {
  expectRejected("adam", [](auto& o) { o.dampening = 0.1; }, "--dampening does not apply");
  expectRejected("sgd", [](auto& o) { o.eps = 1e-8; }, "--eps does not apply");
  expectRejected("sgd", [](auto& o) { o.lrDecay = 0.1; }, "--lr-decay does not apply");
}

TEST(OptimizerOptions, AcceptsPyTorchDefaults) {
  for (const auto& name : optimizerNames()) {
    OptimizerOptions o;
    o.name = name;
    if (name == "nesterov") o.momentum = 0.9;
    EXPECT_NO_THROW(createOptimizer(o, {torch::zeros({2}, torch::requires_grad())})) << name;
  }
}

TEST(OptimizerOptions, EmptyParameterListIsAnInputError) {
  EXPECT_THROW(createOptimizer(OptimizerOptions{}, {}), tl::InputError);
}

TEST(OptimizerOptions, NegativeScheduledLrIsRejectedAtStep) {
  auto p = torch::zeros({2}, torch::requires_grad());
  auto optimizer = createOptimizer(OptimizerOptions{}, {p});
  p.mutable_grad() = torch::ones({2});
  EXPECT_THROW(optimizer->step(-0.1), tl::InputError);
  EXPECT_TRUE(p.eq(0).all().item<bool>());
}

}  // namespace
}  // namespace tl::optim::testing
