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
  int64_t totalSteps = 0;         // cosine: anneal from baseLr to minLr over totalSteps
  double minLr = 0.0;
  int64_t warmupSteps = 0;        // linear warm-up from baseLr/warmup... to baseLr, then the schedule
};

// The learning rate for optimizer step `step` (0-based). InputError on a bad schedule.
double learningRate(const LrSchedule& schedule, int64_t step);
void validate(const LrSchedule& schedule);

}  // namespace tl::optim
