// --device sim:RATE: a stand-in for a device of known speed on machines without one, for the
// loader tuning and the coordinator's benches. Nothing is trained, reduced or broadcast.
#include <chrono>
#include <thread>

#include "est/step_backend.h"
#include "est/step_timers.h"

namespace tl::est {
namespace {

class SimulatedBackend final : public StepBackend {
 public:
  explicit SimulatedBackend(double imagesPerSecond) : rate_(imagesPerSecond) {}

  bool simulated() const override { return true; }
  void beginStep() override {}
  void beginRound() override {}

  train::BatchStats computeEst(int, bool, const at::Tensor&, const at::Tensor& labels, double& computeSeconds) override {
    const auto t0 = EpochTimers::Clock::now();
    // Busy for batch/RATE seconds without using a core.
    std::this_thread::sleep_for(std::chrono::duration<double>(double(labels.size(0)) / rate_));
    computeSeconds += secondsBetween(t0, EpochTimers::Clock::now());
    train::BatchStats stats;
    stats.samples = labels.size(0);
    return stats;
  }

  bool reduce(int, double&) override { return true; }
  void applyRankZeroBuffers(bool, int) override {}
  void optimizerStep(double) override {}
  double clipGradients(double) override { return 0.0; }

 private:
  double rate_;
};

}  // namespace

std::unique_ptr<StepBackend> createSimulatedBackend(double imagesPerSecond) {
  return std::make_unique<SimulatedBackend>(imagesPerSecond);
}

}  // namespace tl::est
