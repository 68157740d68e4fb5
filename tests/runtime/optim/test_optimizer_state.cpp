// Optimizer state as named tensors: a save/load round trip continues bit for bit, and a state
// that does not fit the optimizer is rejected with a message naming the entry.
#include <gtest/gtest.h>

#include "common/check.h"
#include "tests/runtime/optim/optim_test_util.h"

namespace tl::optim::testing {
namespace {

using State = std::vector<std::pair<std::string, at::Tensor>>;

OptimizerOptions stateTestOptions(const std::string& name) {
  OptimizerOptions o;
  o.name = name;
  if (name == "sgd" || name == "nesterov") o.momentum = 0.9;
  if (name == "adagrad") o.lrDecay = 0.01;
  o.weightDecay = 0.01;
  return o;
}

struct Training {
  std::vector<at::Tensor> params;
  std::unique_ptr<Optimizer> optimizer;
};

// Two parameters so that per-parameter names are exercised; the second gets no gradient at
// the first step, so its state starts one step later.
Training makeRun(const std::string& name) {
  Training run;
  run.params = {torch::tensor({1.0f, -2.0f, 3.0f}).set_requires_grad(true),
                torch::tensor({{0.5f, 0.25f}}).set_requires_grad(true)};
  run.optimizer = createOptimizer(stateTestOptions(name), run.params);
  return run;
}

void step(Training& run, int k) {
  run.params[0].mutable_grad() = makeTensor(kGrads[k], torch::kFloat);
  if (k > 0) run.params[1].mutable_grad() = torch::tensor({{0.1f * float(k), -0.3f}});
  run.optimizer->step(0.05 * kLrScale[k]);
}

const at::Tensor& find(const State& state, const std::string& name) {
  for (const auto& entry : state)
    if (entry.first == name) return entry.second;
  throw std::runtime_error("no state entry " + name);
}

void expectInputError(Optimizer& optimizer, const State& state, const std::string& mention) {
  try {
    optimizer.loadState(state);
    ADD_FAILURE() << "no InputError; expected one mentioning '" << mention << "'";
  } catch (const tl::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

class OptimizerState : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerState, RoundTripContinuesBitForBit) {
  Training original = makeRun(GetParam());
  step(original, 0);
  step(original, 1);
  const State saved = original.optimizer->state();

  // A fresh optimizer on copies of the parameters, restored from the saved state.
  Training restored = makeRun(GetParam());
  {
    torch::NoGradGuard noGrad;
    for (size_t i = 0; i < restored.params.size(); ++i) restored.params[i].copy_(original.params[i]);
  }
  restored.optimizer->loadState(saved);
  step(original, 2);
  step(restored, 2);
  for (size_t i = 0; i < original.params.size(); ++i)
    EXPECT_TRUE(original.params[i].equal(restored.params[i])) << "parameter " << i;
  const State a = original.optimizer->state(), b = restored.optimizer->state();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(a[i].second.equal(b[i].second)) << a[i].first;
  }
}

TEST_P(OptimizerState, StateIsASnapshot) {
  Training run = makeRun(GetParam());
  step(run, 0);
  State state = run.optimizer->state();
  for (auto& entry : state) entry.second.fill_(7);
  for (const auto& [name, tensor] : run.optimizer->state())
    EXPECT_FALSE((tensor == 7).all().item<bool>()) << name << " aliases the optimizer's tensor";
}

TEST_P(OptimizerState, NamesCountersAndSlots) {
  Training run = makeRun(GetParam());
  step(run, 0);
  step(run, 1);
  const State state = run.optimizer->state();
  EXPECT_EQ(state.front().first, "step");
  EXPECT_EQ(find(state, "step").item<int64_t>(), 2);
  EXPECT_EQ(find(state, "0.step").item<int64_t>(), 2);
  EXPECT_EQ(find(state, "1.step").item<int64_t>(), 1);
  for (const auto& [name, tensor] : state) {
    if (name.find("step") != std::string::npos) continue;
    const int index = name[0] - '0';
    EXPECT_EQ(tensor.sizes(), run.params[index].sizes()) << name;
  }
}

TEST_P(OptimizerState, RejectsStateThatDoesNotFit) {
  Training run = makeRun(GetParam());
  step(run, 0);
  step(run, 1);
  const State good = run.optimizer->state();
  ASSERT_GE(good.size(), 3u);
  const std::string slotName = good.back().first;  // "1.<slot>", or "1.step" for plain sgd

  State missingStep(good.begin() + 1, good.end());
  expectInputError(*run.optimizer, missingStep, "lacks 'step'");

  State outOfRange = good;
  outOfRange.emplace_back("2.step", torch::tensor(int64_t(1)));
  expectInputError(*run.optimizer, outOfRange, "'2.step'");

  State unknownSlot = good;
  unknownSlot.emplace_back("0.max_exp_avg_sq", torch::zeros({3}));
  expectInputError(*run.optimizer, unknownSlot, "'0.max_exp_avg_sq'");

  State duplicate = good;
  duplicate.push_back(good.back());
  expectInputError(*run.optimizer, duplicate, "appears twice");

  if (slotName != "1.step") {
    State wrongShape = good;
    wrongShape.back().second = torch::zeros({2, 1});
    expectInputError(*run.optimizer, wrongShape, "shape");

    State wrongDtype = good;
    wrongDtype.back().second = wrongDtype.back().second.to(torch::kDouble);
    expectInputError(*run.optimizer, wrongDtype, "dtype");

    State missingSlot(good.begin(), good.end() - 1);
    expectInputError(*run.optimizer, missingSlot, "lacks '" + slotName + "'");
  }

  // After all those rejections the optimizer still holds its own state.
  const State after = run.optimizer->state();
  ASSERT_EQ(after.size(), good.size());
  for (size_t i = 0; i < good.size(); ++i) EXPECT_TRUE(after[i].second.equal(good[i].second));
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, OptimizerState,
                         ::testing::Values("sgd", "nesterov", "adagrad", "adadelta", "adam",
                                           "adamw"),
                         [](const auto& info) { return info.param; });

TEST(OptimizerStateAcrossKinds, AdamStateIsNotSgdState) {
  Training adam = makeRun("adam");
  step(adam, 0);
  Training sgd = makeRun("sgd");
  expectInputError(*sgd.optimizer, adam.optimizer->state(), "'0.exp_avg'");
}

TEST(OptimizerStateAcrossKinds, PlainSgdHasOnlyCounters) {
  OptimizerOptions o;  // sgd without momentum keeps no buffers
  auto p = torch::tensor({1.0f}).set_requires_grad(true);
  auto optimizer = createOptimizer(o, {p});
  p.mutable_grad() = torch::tensor({1.0f});
  optimizer->step(0.1);
  const State state = optimizer->state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].first, "step");
  EXPECT_EQ(state[1].first, "0.step");
}

}  // namespace
}  // namespace tl::optim::testing
