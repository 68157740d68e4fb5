// Every optimizer against its update rule worked out here in plain double arithmetic, element
// by element, from the formulas of PyTorch 1.13's documentation and source. The optimizer runs
// on float64 parameters, so the two must agree to rounding (1e-12).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/runtime/optim/optim_test_util.h"

namespace tl::optim::testing {
namespace {

constexpr double kTolerance = 1e-12;

void expectTrajectory(const Trajectory& actual, const Trajectory& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k)
    for (size_t i = 0; i < expected[k].size(); ++i)
      EXPECT_NEAR(actual[k][i], expected[k][i], kTolerance) << "step " << k + 1 << " element " << i;
}

Trajectory referenceSgd(const OptimizerOptions& o, bool nesterov) {
  std::vector<double> p = kInitialParam, buf(p.size());
  Trajectory out;
  for (size_t k = 0; k < kGrads.size(); ++k) {
    const double lr = o.lr * kLrScale[k];
    for (size_t i = 0; i < p.size(); ++i) {
      double dp = kGrads[k][i] + o.weightDecay * p[i];
      if (o.momentum != 0) {
        buf[i] = k == 0 ? dp : o.momentum * buf[i] + (1 - o.dampening) * dp;  // first: clone
        dp = nesterov ? dp + o.momentum * buf[i] : buf[i];
      }
      p[i] -= lr * dp;
    }
    out.push_back(p);
  }
  return out;
}

Trajectory referenceAdagrad(const OptimizerOptions& o) {
  std::vector<double> p = kInitialParam, sum(p.size(), o.initialAccumulator);
  Trajectory out;
  for (size_t k = 0; k < kGrads.size(); ++k) {
    const double clr = o.lr * kLrScale[k] / (1 + double(k) * o.lrDecay);  // k = step - 1
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = kGrads[k][i] + o.weightDecay * p[i];
      sum[i] += g * g;
      p[i] -= clr * g / (std::sqrt(sum[i]) + o.eps);
    }
    out.push_back(p);
  }
  return out;
}

Trajectory referenceAdadelta(const OptimizerOptions& o) {
  std::vector<double> p = kInitialParam, squareAvg(p.size()), accDelta(p.size());
  Trajectory out;
  for (size_t k = 0; k < kGrads.size(); ++k) {
    const double lr = o.lr * kLrScale[k];
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = kGrads[k][i] + o.weightDecay * p[i];
      squareAvg[i] = o.rho * squareAvg[i] + (1 - o.rho) * g * g;
      const double delta = std::sqrt(accDelta[i] + o.eps) / std::sqrt(squareAvg[i] + o.eps) * g;
      accDelta[i] = o.rho * accDelta[i] + (1 - o.rho) * delta * delta;
      p[i] -= lr * delta;
    }
    out.push_back(p);
  }
  return out;
}

Trajectory referenceAdam(const OptimizerOptions& o, bool decoupled) {
  std::vector<double> p = kInitialParam, m(p.size()), v(p.size());
  Trajectory out;
  for (size_t k = 0; k < kGrads.size(); ++k) {
    const double lr = o.lr * kLrScale[k];
    const double t = double(k + 1);
    const double correction1 = 1 - std::pow(o.beta1, t), correction2 = 1 - std::pow(o.beta2, t);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = kGrads[k][i];
      if (decoupled) {
        p[i] *= 1 - lr * o.weightDecay;
      } else {
        g += o.weightDecay * p[i];
      }
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
      // eps after the bias correction of sqrt(v), as PyTorch places it.
      p[i] -= lr / correction1 * m[i] / (std::sqrt(v[i]) / std::sqrt(correction2) + o.eps);
    }
    out.push_back(p);
  }
  return out;
}

OptimizerOptions sgdOptions(const std::string& name, double momentum, double dampening) {
  OptimizerOptions o;
  o.name = name;
  o.lr = 0.1;
  o.momentum = momentum;
  o.dampening = dampening;
  o.weightDecay = 0.01;
  return o;
}

TEST(OptimizerReference, SgdFirstStepByHand) {
  // p - lr * (g + wd * p) = 1 - 0.1 * (0.1 + 0.01 * 1) = 0.989, and so on.
  auto steps = runScenario(sgdOptions("sgd", 0, 0), torch::kDouble);
  EXPECT_NEAR(steps[0][0], 0.989, kTolerance);
  EXPECT_NEAR(steps[0][1], -2 - 0.1 * (-0.2 - 0.02), kTolerance);
  EXPECT_NEAR(steps[0][2], 3 - 0.1 * (0.3 + 0.03), kTolerance);
}

TEST(OptimizerReference, PlainSgd) {
  auto o = sgdOptions("sgd", 0, 0);
  expectTrajectory(runScenario(o, torch::kDouble), referenceSgd(o, false));
}

TEST(OptimizerReference, SgdMomentumDampening) {
  auto o = sgdOptions("sgd", 0.9, 0.1);
  expectTrajectory(runScenario(o, torch::kDouble), referenceSgd(o, false));
  // The buffer starts as d_p itself: dampening must not scale the first step.
  EXPECT_NEAR(runScenario(o, torch::kDouble)[0][0], 0.989, kTolerance);
}

TEST(OptimizerReference, Nesterov) {
  auto o = sgdOptions("nesterov", 0.9, 0);
  expectTrajectory(runScenario(o, torch::kDouble), referenceSgd(o, true));
}

TEST(OptimizerReference, Adagrad) {
  OptimizerOptions o;
  o.name = "adagrad";
  o.lr = 0.1;
  o.lrDecay = 0.01;
  o.weightDecay = 0.01;
  o.initialAccumulator = 0.1;
  o.eps = 1e-3;  // large enough that adding it after the sqrt matters at 1e-12
  expectTrajectory(runScenario(o, torch::kDouble), referenceAdagrad(o));
}

TEST(OptimizerReference, Adadelta) {
  OptimizerOptions o;
  o.name = "adadelta";
  o.lr = 1.0;
  o.rho = 0.9;
  o.eps = 1e-6;
  o.weightDecay = 0.01;
  expectTrajectory(runScenario(o, torch::kDouble), referenceAdadelta(o));
}

TEST(OptimizerReference, AdamFirstStepIsLrTimesSignOfGradient) {
  // With zero weight decay and tiny eps, the bias-corrected first step is lr * g / |g|.
  OptimizerOptions o;
  o.name = "adam";
  o.lr = 0.01;
  auto steps = runScenario(o, torch::kDouble);
  EXPECT_NEAR(steps[0][0], 1 - 0.01, 1e-8);
  EXPECT_NEAR(steps[0][1], -2 + 0.01, 1e-8);
  EXPECT_NEAR(steps[0][2], 3 - 0.01, 1e-8);
}

TEST(OptimizerReference, AdamWithL2AndLargeEps) {
  OptimizerOptions o;
  o.name = "adam";
  o.lr = 0.01;
  o.weightDecay = 0.01;
  o.beta1 = 0.8;
  o.beta2 = 0.9;
  o.eps = 0.1;  // large: eps inside vs. after the bias correction differ by far more than 1e-12
  expectTrajectory(runScenario(o, torch::kDouble), referenceAdam(o, false));
}

TEST(OptimizerReference, AdamWDecoupledDecay) {
  OptimizerOptions o;
  o.name = "adamw";
  o.lr = 0.01;
  o.weightDecay = 0.1;
  o.eps = 0.1;
  expectTrajectory(runScenario(o, torch::kDouble), referenceAdam(o, true));
}

TEST(OptimizerReference, ParameterWithoutGradientIsSkippedAndKeepsItsOwnStepCount) {
  // Adam's bias correction uses the parameter's own update count, as PyTorch's per-parameter
  // state['step']: a parameter first updated at the optimizer's second step takes a first step.
  auto a = torch::tensor({1.0}, torch::kDouble).set_requires_grad(true);
  auto b = torch::tensor({1.0}, torch::kDouble).set_requires_grad(true);
  OptimizerOptions o;
  o.name = "adam";
  o.lr = 0.01;
  auto optimizer = createOptimizer(o, {a, b});
  a.mutable_grad() = torch::tensor({0.5}, torch::kDouble);
  optimizer->step(o.lr);
  EXPECT_EQ(b.item<double>(), 1.0);
  b.mutable_grad() = torch::tensor({0.5}, torch::kDouble);
  optimizer->step(o.lr);
  EXPECT_NEAR(b.item<double>(), 1 - 0.01, 1e-8);
  for (const auto& [name, tensor] : optimizer->state()) {
    if (name == "step" || name == "0.step") {
      EXPECT_EQ(tensor.item<int64_t>(), 2) << name;
    } else if (name == "1.step") {
      EXPECT_EQ(tensor.item<int64_t>(), 1) << name;
    }
  }
}

TEST(OptimizerReference, ZeroGradKeepsTensorsAndZerosThem) {
  auto p = torch::tensor({1.0, 2.0}).set_requires_grad(true);
  auto optimizer = createOptimizer(OptimizerOptions{}, {p});
  (p * p).sum().backward();
  const void* storage = p.grad().data_ptr();
  optimizer->zeroGrad();
  ASSERT_TRUE(p.grad().defined());
  EXPECT_EQ(p.grad().data_ptr(), storage);
  EXPECT_EQ(p.grad().abs().sum().item<float>(), 0.0f);
}

}  // namespace
}  // namespace tl::optim::testing

namespace tl::optim {
namespace {

// setDecay: PyTorch's two parameter groups. The parameter outside the decayed group follows an
// optimizer without weight decay bit for bit; the other one an optimizer with it.
TEST(OptimizerReference, ParametersOutsideTheDecayGroupTakeNoWeightDecay) {
  for (const std::string name : {"sgd", "adam", "adamw", "adagrad", "adadelta"}) {
    OptimizerOptions o;
    o.name = name;
    o.lr = 0.1;
    o.weightDecay = 0.5;
    if (name == "sgd") o.momentum = 0.9;
    OptimizerOptions without = o;
    without.weightDecay = 0;
    auto make = [] { return torch::tensor({1.5, -2.0}, torch::kFloat).set_requires_grad(true); };
    auto decayed = make(), exempt = make(), withDecay = make(), withoutDecay = make();
    auto grouped = createOptimizer(o, {decayed, exempt});
    grouped->setDecay({true, false});
    auto plainWith = createOptimizer(o, {withDecay});
    auto plainWithout = createOptimizer(without, {withoutDecay});
    for (int step = 0; step < 3; ++step) {
      const auto g = torch::tensor({0.25f * float(step + 1), -0.5f}, torch::kFloat);
      for (auto* p : {&decayed, &exempt, &withDecay, &withoutDecay}) p->mutable_grad() = g.clone();
      grouped->step(o.lr);
      plainWith->step(o.lr);
      plainWithout->step(o.lr);
    }
    EXPECT_TRUE(torch::equal(decayed, withDecay)) << name;
    EXPECT_TRUE(torch::equal(exempt, withoutDecay)) << name;
    EXPECT_FALSE(torch::equal(decayed, exempt)) << name << ": the decay made no difference";

    // A checkpoint restored into an optimizer set up the same way (setDecay, then loadState,
    // as a resumed job does) keeps the groups: one more step as the uninterrupted one.
    auto decayed2 = decayed.detach().clone().set_requires_grad(true);
    auto exempt2 = exempt.detach().clone().set_requires_grad(true);
    auto restored = createOptimizer(o, {decayed2, exempt2});
    restored->setDecay({true, false});
    restored->loadState(grouped->state());
    const auto g = torch::tensor({0.75f, 0.125f}, torch::kFloat);
    for (auto* p : {&decayed, &exempt, &decayed2, &exempt2}) p->mutable_grad() = g.clone();
    grouped->step(o.lr);
    restored->step(o.lr);
    EXPECT_TRUE(torch::equal(decayed2, decayed)) << name << ": restored";
    EXPECT_TRUE(torch::equal(exempt2, exempt)) << name << ": restored";
  }
}

// SGD updates its parameters a list at a time (one list per weight decay, device and dtype, of
// those that have their momentum buffer). Every parameter must still follow the single-tensor
// rule bit for bit: parameters of two dtypes, two decay groups, one without a gradient at a
// step, and one whose first gradient (its buffer's first copy) comes while the others are lists.
TEST(OptimizerReference, SgdListsGiveTheSingleTensorBits) {
  torch::manual_seed(7);
  for (const std::string name : {"sgd", "nesterov"}) {
    OptimizerOptions o;
    o.name = name;
    o.lr = 0.1;
    o.momentum = 0.9;
    o.dampening = name == "sgd" ? 0.25 : 0.0;
    o.weightDecay = 0.03;
    const bool nesterov = name == "nesterov";
    std::vector<at::Tensor> params, mirror, buffers(6);
    const std::vector<bool> decays = {true, false, true, true, false, true};
    for (int i = 0; i < 6; ++i) {
      const auto dtype = i % 3 == 2 ? torch::kDouble : torch::kFloat;
      auto init = torch::randn({3 + i}, torch::TensorOptions().dtype(dtype)) * (i + 1);
      params.push_back(init.clone().set_requires_grad(true));
      mirror.push_back(init.clone());
    }
    auto optimizer = createOptimizer(o, params);
    optimizer->setDecay(decays);
    for (int step = 0; step < 5; ++step) {
      const double lr = o.lr / (step + 1);
      for (size_t i = 0; i < params.size(); ++i) {
        // Parameter 3 has no gradient at step 1; parameter 5 gets its first at step 3.
        const bool has = !(i == 3 && step == 1) && !(i == 5 && step < 3);
        if (!has) {
          params[i].mutable_grad() = at::Tensor();
          continue;
        }
        auto g = torch::randn(params[i].sizes(), params[i].options().requires_grad(false)) *
                 std::pow(10.0, step - 2);
        params[i].mutable_grad() = g;
        // The single-tensor rule (PyTorch's _single_tensor_sgd), op for op.
        at::Tensor dp = g;
        if (decays[i]) dp = dp.add(mirror[i], o.weightDecay);
        if (!buffers[i].defined()) {
          buffers[i] = dp.clone();
        } else {
          buffers[i].mul_(o.momentum).add_(dp, 1 - o.dampening);
        }
        dp = nesterov ? dp.add(buffers[i], o.momentum) : buffers[i];
        mirror[i].add_(dp, -lr);
      }
      optimizer->step(lr);
      for (size_t i = 0; i < params.size(); ++i)
        ASSERT_TRUE(torch::equal(params[i].detach(), mirror[i]))
            << name << " step " << step + 1 << " parameter " << i;
    }
    for (const auto& [key, tensor] : optimizer->state()) {
      if (key == "5.step") {
        EXPECT_EQ(tensor.item<int64_t>(), 2) << name;
      } else if (key == "3.step") {
        EXPECT_EQ(tensor.item<int64_t>(), 4) << name;
      }
    }
  }
}

}  // namespace
}  // namespace tl::optim
