// The schedules in steps (--warmup-steps, --decay-steps, --lr-schedule cosine|linear): nanoGPT's
// get_lr, computed as baseLr * factor so that PyTorch's LambdaLR gives the same doubles.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/check.h"
#include "runtime/optim/lr_schedule.h"

namespace tl::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;

LrSchedule inSteps(const std::string& kind, double lr, double minLr, int64_t warmup, int64_t decay) {
  LrSchedule s;
  s.kind = kind;
  s.baseLr = lr;
  s.minLr = minLr;
  s.inSteps = true;
  s.warmupSteps = warmup;
  s.decaySteps = decay;
  return s;
}

// nanoGPT's train.py get_lr, as written there.
double nanoGptLr(int64_t it, double lr, double minLr, int64_t w, int64_t d) {
  if (it < w) return lr * double(it + 1) / double(w + 1);
  if (it > d) return minLr;
  const double ratio = double(it - w) / double(d - w);
  return minLr + 0.5 * (1.0 + std::cos(kPi * ratio)) * (lr - minLr);
}

TEST(StepSchedule, CosineIsNanoGptsGetLr) {
  const LrSchedule s = inSteps("cosine", 6e-4, 6e-5, 3, 10);
  for (int64_t it = 0; it < 14; ++it)
    EXPECT_NEAR(learningRate(s, it), nanoGptLr(it, 6e-4, 6e-5, 3, 10), 1e-18) << "step " << it;
}

TEST(StepSchedule, CosineGivesLambdaLrsDoubles) {
  // Printed by Python 3 for base_lr * lambda(it), lambda written as bench/reference's
  // step_lr_factor (6e-4, min 6e-5, W 3, D 10): the bits the reference's LambdaLR sets.
  const LrSchedule s = inSteps("cosine", 6e-4, 6e-5, 3, 10);
  const double expected[] = {0.00015, 0.0003, 0.00045, 0.0006, 0.0005732615943336531, 0.000498342246501858,
                             0.0003900806521682048, 0.00026991934783179513, 0.00016165775349814197,
                             8.673840566634686e-05, 5.9999999999999995e-05, 5.9999999999999995e-05};
  for (int64_t it = 0; it < 12; ++it) EXPECT_EQ(learningRate(s, it), expected[it]) << "step " << it;
}

TEST(StepSchedule, LinearWarmsUpThenFallsToTheFloorAtDecaySteps) {
  const LrSchedule s = inSteps("linear", 0.1, 0.0, 2, 7);
  const double expected[] = {0.03333333333333333, 0.06666666666666667, 0.1, 0.08000000000000002, 0.06,
                             0.04000000000000001, 0.019999999999999997, 0.0, 0.0, 0.0};
  for (int64_t it = 0; it < 10; ++it) EXPECT_EQ(learningRate(s, it), expected[it]) << "step " << it;
}

TEST(StepSchedule, WarmupThenConstant) {
  const LrSchedule s = inSteps("constant", 0.3, 0.0, 2, 0);
  EXPECT_EQ(learningRate(s, 0), 0.3 * (1.0 / 3.0));
  EXPECT_EQ(learningRate(s, 1), 0.3 * (2.0 / 3.0));
  EXPECT_EQ(learningRate(s, 2), 0.3);
  EXPECT_EQ(learningRate(s, 1000), 0.3);
}

TEST(StepSchedule, ConstantIgnoresTheFloor) {
  const LrSchedule s = inSteps("constant", 0.1, 0.5, 1, 0);  // --min-lr applies to the decays only
  EXPECT_EQ(learningRate(s, 0), 0.1 * 0.5);
  EXPECT_EQ(learningRate(s, 3), 0.1);
}

TEST(StepSchedule, NoWarmupStartsAtTheBaseRate) {
  const LrSchedule s = inSteps("cosine", 0.2, 0.02, 0, 4);
  EXPECT_EQ(learningRate(s, 0), 0.2);
  EXPECT_NEAR(learningRate(s, 2), 0.11, 1e-16);  // half way: the mean of 0.2 and 0.02
  EXPECT_NEAR(learningRate(s, 4), 0.02, 1e-17);
}

TEST(StepSchedule, ZeroBaseRateStaysZero) {
  const LrSchedule s = inSteps("cosine", 0.0, 0.0, 1, 3);
  for (int64_t it = 0; it < 5; ++it) EXPECT_EQ(learningRate(s, it), 0.0);
}

TEST(StepSchedule, EpochFormsAreUntouched) {
  // The same kind without inSteps: CosineAnnealingLR's closed form after (step + 1) / w warm-up.
  LrSchedule s;
  s.kind = "cosine";
  s.baseLr = 0.4;
  s.warmupSteps = 4;
  s.totalSteps = 10;
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 0.1);
  EXPECT_DOUBLE_EQ(learningRate(s, 4), 0.4);
}

TEST(StepSchedule, RejectsTheEpochStepScheduleAndABadFloor) {
  LrSchedule s = inSteps("step", 0.1, 0.0, 2, 5);
  EXPECT_THROW(validate(s), tl::InputError);
  s = inSteps("cosine", 0.1, 0.2, 2, 5);
  try {
    validate(s);
    ADD_FAILURE() << "accepted a --min-lr above --lr";
  } catch (const tl::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--min-lr"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tl::optim
