// --workers auto, on the executor's side: measurement windows of about a second go to the
// LoaderTuner (the node coordinator), and a new pool size it decided is applied at a step
// boundary. A window measures one pool size: it restarts when the size changes.
#pragma once

#include <cstdint>

#include "dataload/loader.h"
#include "est/loader_tuner.h"
#include "est/step_timers.h"

namespace tl::est {

class LoaderTuningWindow {
 public:
  LoaderTuningWindow(LoaderTuner& tuner, data::Loader& loader);
  // At a step boundary: the step's compute time and images consumed by this process. Returns
  // true when the pool was resized. `lead` logs the change.
  bool afterStep(double computeSeconds, int64_t consumed, bool lead);

 private:
  void restart(const data::LoaderStats& now);

  LoaderTuner& tuner_;
  data::Loader& loader_;
  EpochTimers::Clock::time_point start_;
  double compute_ = 0;
  int64_t consumed_ = 0;
  data::LoaderStats loaderAtStart_;
};

}  // namespace tl::est
