#include "est/loader_tuning.h"

#include <spdlog/spdlog.h>

namespace tl::est {

LoaderTuningWindow::LoaderTuningWindow(LoaderTuner& tuner, data::Loader& loader)
    : tuner_(tuner), loader_(loader) {
  restart(loader_.stats());
}

void LoaderTuningWindow::restart(const data::LoaderStats& now) {
  start_ = EpochTimers::Clock::now();
  compute_ = 0;
  consumed_ = 0;
  loaderAtStart_ = now;
}

bool LoaderTuningWindow::afterStep(double computeSeconds, int64_t consumed, bool lead) {
  compute_ += computeSeconds;
  consumed_ += consumed;
  if (secondsBetween(start_, EpochTimers::Clock::now()) >= 1.0) {
    data::LoaderStats now = loader_.stats();
    coordinator::LoaderObservation lo;
    lo.workers = now.workers;
    lo.busySeconds = now.workerBusySeconds - loaderAtStart_.workerBusySeconds;
    lo.images = now.images - loaderAtStart_.images;
    tuner_.report(lo, coordinator::ComputeObservation{compute_, consumed_}, now.waitSeconds - loaderAtStart_.waitSeconds);
    restart(now);
  }
  if (auto w = tuner_.pendingWorkers(); w && *w != loader_.workers()) {
    if (lead) spdlog::info("loader workers {} -> {} (node coordinator)", loader_.workers(), *w);
    loader_.setWorkers(*w);
    restart(loader_.stats());
    return true;
  }
  return false;
}

}  // namespace tl::est
