#include <gtest/gtest.h>

#include <cmath>

#include "common/check.h"
#include "runtime/optim/lr_schedule.h"

namespace tl::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;

TEST(LrSchedule, Constant) {
  LrSchedule s;
  s.baseLr = 0.05;
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 0.05);
  EXPECT_DOUBLE_EQ(learningRate(s, 123456), 0.05);
}

TEST(LrSchedule, StepDecaysByGammaEveryStepSize) {
  LrSchedule s;
  s.kind = "step";
  s.baseLr = 0.1;
  s.stepSize = 3;
  s.gamma = 0.5;
  const double expected[] = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025};
  for (int step = 0; step < 7; ++step) EXPECT_DOUBLE_EQ(learningRate(s, step), expected[step]);
}

TEST(LrSchedule, CosineFollowsCosineAnnealingLrAndHoldsAtTheEnd) {
  LrSchedule s;
  s.kind = "cosine";
  s.baseLr = 0.1;
  s.minLr = 0.001;
  s.totalSteps = 10;
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 0.1);
  EXPECT_NEAR(learningRate(s, 5), 0.001 + 0.099 / 2, 1e-15);  // half way: the mean
  EXPECT_NEAR(learningRate(s, 3), 0.001 + 0.099 * (1 + std::cos(kPi * 3 / 10)) / 2, 1e-15);
  EXPECT_NEAR(learningRate(s, 10), 0.001, 1e-15);
  EXPECT_NEAR(learningRate(s, 25), 0.001, 1e-15);
  // Values printed by PyTorch 1.13's closed form (CosineAnnealingLR._get_closed_form_lr) with
  // base_lr 0.1, eta_min 0.001, T_max 10, last_epoch 1 and 7.
  EXPECT_NEAR(learningRate(s, 1), 0.09757729755661011, 1e-15);
  EXPECT_NEAR(learningRate(s, 7), 0.021404630011522586, 1e-15);
}

TEST(LrSchedule, LinearWarmupThenScheduleCountedFromItsEnd) {
  LrSchedule s;
  s.kind = "step";
  s.baseLr = 0.4;
  s.stepSize = 2;
  s.gamma = 0.1;
  s.warmupSteps = 4;
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 0.1);
  EXPECT_DOUBLE_EQ(learningRate(s, 1), 0.2);
  EXPECT_DOUBLE_EQ(learningRate(s, 3), 0.4);
  EXPECT_DOUBLE_EQ(learningRate(s, 4), 0.4);   // schedule step 0
  EXPECT_DOUBLE_EQ(learningRate(s, 5), 0.4);
  EXPECT_NEAR(learningRate(s, 6), 0.04, 1e-15);  // schedule step 2: first decay

  s.kind = "cosine";
  s.totalSteps = 10;  // annealing steps after the 4 warm-up steps
  s.minLr = 0;
  EXPECT_DOUBLE_EQ(learningRate(s, 4), 0.4);
  EXPECT_NEAR(learningRate(s, 9), 0.2, 1e-15);
  EXPECT_NEAR(learningRate(s, 14), 0.0, 1e-15);
}

void expectInvalid(const LrSchedule& s, const std::string& mention) {
  try {
    validate(s);
    ADD_FAILURE() << "accepted; expected an InputError mentioning '" << mention << "'";
  } catch (const tl::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
  EXPECT_THROW(learningRate(s, 0), tl::InputError);
}

TEST(LrSchedule, RejectsBadSchedules) {
  LrSchedule s;
  s.kind = "linear";
  expectInvalid(s, "unknown lr schedule 'linear'");
  s = LrSchedule{};
  s.baseLr = -1;
  expectInvalid(s, "--lr must be >= 0");
  s = LrSchedule{};
  s.kind = "step";
  expectInvalid(s, "--lr-step-size must be > 0");
  s.stepSize = 5;
  s.gamma = 0;
  expectInvalid(s, "--lr-gamma");
  s = LrSchedule{};
  s.kind = "cosine";
  s.totalSteps = 0;
  expectInvalid(s, "the annealing length must be > 0 steps");
  s.totalSteps = 10;
  s.minLr = 0.5;
  expectInvalid(s, "--min-lr");
  s = LrSchedule{};
  s.warmupSteps = -1;
  expectInvalid(s, "--warmup-steps");
}

}  // namespace
}  // namespace tl::optim
