// Learning-rate schedules as pure functions of the step: nothing to checkpoint but the step.
#pragma once

#include <cstdint>
#include <string>

namespace tl::optim {

struct LrSchedule {
  std::string kind = "constant";  // constant | step | cosine | linear (linear: inSteps only)
  double baseLr = 0.1;
  int64_t stepSize = 0;           // step: multiply by gamma every stepSize steps
  double gamma = 0.1;
  int64_t totalSteps = 0;         // cosine: anneal from baseLr to minLr over totalSteps steps
                                  // counted after the warm-up
  double minLr = 0.0;             // cosine: reached at step warmupSteps + totalSteps, then kept
  int64_t warmupSteps = 0;        // linear warm-up, then the schedule counted from its end
  // --warmup-steps / --decay-steps / --lr-schedule linear: nanoGPT's get_lr (below) instead of
  // the epoch forms; decaySteps is the step index at which the decay reaches minLr.
  bool inSteps = false;
  int64_t decaySteps = 0;
};

// With w = warmupSteps and t = step - w:
//   step < w:  baseLr * (step + 1) / w
//   constant:  baseLr
//   step:      baseLr * gamma^floor(t / stepSize)
//   cosine:    minLr + (baseLr - minLr) * (1 + cos(pi * min(t, T) / T)) / 2, T = totalSteps
//              (PyTorch's CosineAnnealingLR closed form with T_max = T, eta_min = minLr)

// inSteps (nanoGPT's get_lr, written as a factor of baseLr so that PyTorch's LambdaLR, which
// computes base_lr * lambda(step), gives the same doubles), with W = warmupSteps,
// D = decaySteps, m = minLr / baseLr (0 when baseLr is 0), all in double:
//   step < W:           f = (step + 1) / (W + 1)
//   constant:           f = 1
//   step >= D:          f = m
//   otherwise           r = (step - W) / (D - W)
//     cosine:           f = m + (0.5 * (1 + cos(pi * r))) * (1 - m)
//     linear:           f = m + (1 - r) * (1 - m)
//   learning rate:      baseLr * f
double stepScheduleFactor(const LrSchedule& schedule, int64_t step);

// The learning rate for optimizer step `step` (0-based). InputError on a bad schedule.
double learningRate(const LrSchedule& schedule, int64_t step);
void validate(const LrSchedule& schedule);

}  // namespace tl::optim
