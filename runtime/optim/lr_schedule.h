// Learning-rate schedules as pure functions of the step: nothing to checkpoint but the step.
#pragma once

#include <cstdint>
#include <string>

namespace tl::optim {

struct LrSchedule {
  std::string kind = "constant";  // constant | step | cosine
  double baseLr = 0.1;
  int64_t stepSize = 0;           // step: multiply by gamma every stepSize steps
  double gamma = 0.1;
  int64_t totalSteps = 0;         // cosine: anneal from baseLr to minLr over totalSteps steps
                                  // counted after the warm-up
  double minLr = 0.0;             // cosine: reached at step warmupSteps + totalSteps, then kept
  int64_t warmupSteps = 0;        // linear warm-up, then the schedule counted from its end
};

// With w = warmupSteps and t = step - w:
//   step < w:  baseLr * (step + 1) / w
//   constant:  baseLr
//   step:      baseLr * gamma^floor(t / stepSize)
//   cosine:    minLr + (baseLr - minLr) * (1 + cos(pi * min(t, T) / T)) / 2, T = totalSteps
//              (PyTorch's CosineAnnealingLR closed form with T_max = T, eta_min = minLr)

// The learning rate for optimizer step `step` (0-based). InputError on a bad schedule.
double learningRate(const LrSchedule& schedule, int64_t step);
void validate(const LrSchedule& schedule);

}  // namespace tl::optim
