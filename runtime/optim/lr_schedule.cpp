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

double learningRate(const LrSchedule& s, int64_t step) {
  validate(s);
  TL_CHECK_GE(step, 0, "optimizer steps count from 0");
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
