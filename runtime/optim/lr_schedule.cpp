#include "runtime/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace tl::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;

bool finiteAtLeast(double value, double low) { return std::isfinite(value) && value >= low; }

}  // namespace

void validate(const LrSchedule& s) {
  if (s.inSteps) {
    TL_REQUIRE(s.kind == "constant" || s.kind == "cosine" || s.kind == "linear",
               "lr schedule '", s.kind, "' counts epochs; --warmup-steps and --decay-steps go with "
               "--lr-schedule constant, cosine or linear");
    TL_REQUIRE(finiteAtLeast(s.baseLr, 0), "--lr must be >= 0 (got ", s.baseLr, ")");
    TL_REQUIRE(s.warmupSteps >= 0, "--warmup-steps must be >= 0 (got ", s.warmupSteps, ")");
    TL_REQUIRE(s.decaySteps >= 0, "--decay-steps must be >= 0 (got ", s.decaySteps, ")");
    TL_REQUIRE(s.kind == "constant" || (finiteAtLeast(s.minLr, 0) && s.minLr <= s.baseLr),
               "lr schedule ", s.kind, ": --min-lr must be in [0, --lr] (got ", s.minLr, ", lr ", s.baseLr, ")");
    return;
  }
  TL_REQUIRE(s.kind == "constant" || s.kind == "step" || s.kind == "cosine",
             "unknown lr schedule '", s.kind, "'; choose one of: constant, step, cosine");
  TL_REQUIRE(finiteAtLeast(s.baseLr, 0), "--lr must be >= 0 (got ", s.baseLr, ")");
  TL_REQUIRE(s.warmupSteps >= 0, "--warmup-steps must be >= 0 (got ", s.warmupSteps, ")");
  if (s.kind == "step") {
    TL_REQUIRE(s.stepSize > 0, "lr schedule step: --lr-step-size must be > 0 (got ", s.stepSize,
               ")");
    TL_REQUIRE(std::isfinite(s.gamma) && s.gamma > 0,
               "lr schedule step: --lr-gamma must be > 0 (got ", s.gamma, ")");
  }
  if (s.kind == "cosine") {
    TL_REQUIRE(s.totalSteps > 0, "lr schedule cosine: the annealing length must be > 0 steps (got ",
               s.totalSteps, "; the run is too short for its warm-up?)");
    TL_REQUIRE(finiteAtLeast(s.minLr, 0) && s.minLr <= s.baseLr,
               "lr schedule cosine: --min-lr must be in [0, --lr] (got ", s.minLr, ", lr ",
               s.baseLr, ")");
  }
}

double stepScheduleFactor(const LrSchedule& s, int64_t step) {
  TL_CHECK(s.inSteps, "stepScheduleFactor: not a step schedule");
  TL_CHECK_GE(step, 0, "optimizer steps count from 0");
  const int64_t w = s.warmupSteps, d = s.decaySteps;
  if (step < w) return double(step + 1) / double(w + 1);
  if (s.kind == "constant") return 1.0;
  const double m = s.baseLr > 0 ? s.minLr / s.baseLr : 0.0;
  if (step >= d) return m;
  const double r = double(step - w) / double(d - w);  // in [0, 1): d > step >= w
  const double coeff = s.kind == "cosine" ? 0.5 * (1.0 + std::cos(kPi * r)) : 1.0 - r;
  return m + coeff * (1.0 - m);
}

double learningRate(const LrSchedule& s, int64_t step) {
  validate(s);
  TL_CHECK_GE(step, 0, "optimizer steps count from 0");
  if (s.inSteps) return s.baseLr * stepScheduleFactor(s, step);
  if (step < s.warmupSteps) return s.baseLr * double(step + 1) / double(s.warmupSteps);
  const int64_t t = step - s.warmupSteps;  // the schedule proper starts after the warm-up
  if (s.kind == "step") return s.baseLr * std::pow(s.gamma, double(t / s.stepSize));
  if (s.kind == "cosine") {
    // CosineAnnealingLR's closed form over the steps after warm-up, held at minLr once done
    // (PyTorch's formula would climb back up past T; a run longer than its schedule should not).
    const int64_t period = s.totalSteps;
    const double angle = kPi * double(std::min(t, period)) / double(period);  // as PyTorch
    return s.minLr + (s.baseLr - s.minLr) * (1 + std::cos(angle)) / 2;
  }
  return s.baseLr;
}

}  // namespace tl::optim
