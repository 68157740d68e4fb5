// What a training run plans and reports, whatever runs its workers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "runtime/job_config.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/train/metrics.h"

namespace tl::train {

struct TrainResult {
  int64_t steps = 0;           // steps done at the end of this run (counting earlier segments)
  int64_t stepsThisRun = 0;
  int64_t epochsCompleted = 0;
  int64_t replays = 0;         // steps recomputed by the reduction (exact mode)
  double finalLoss = 0;        // mean loss over all workers of the last step
  double trainAccuracy = 0;    // over the last (possibly partial) epoch
  bool evaluated = false;
  double testAccuracy = 0;
  double testLoss = 0;
  bool hasAccuracy = true;     // false with --model-returns loss: there are no class scores
  bool hasPerplexity = false;  // --dataset tokens: exp(mean loss) is reported
  double imagesPerSecond = 0;  // all workers together, over this run
  double wallSeconds = 0;
  std::string paramsSha256;
  // --keep-best: the step and validation loss of the model kept in <output-dir>/best/.
  bool hasBest = false;
  int64_t bestStep = 0;
  double bestValLoss = 0;
  std::vector<EpochSummary> epochs;
  // Where the time went over this run, for throughput models (tl-profile, the coordinator).
  double computeSeconds = 0;
  double dataWaitSeconds = 0;
  int loaderWorkers = 0;         // pool size at the end
  double loaderBusySeconds = 0;  // summed over loader workers
  int64_t loaderImages = 0;
  int64_t loaderResizes = 0;     // pool size changes applied (--workers auto)
  bool simulatedDevice = false;  // --device sim:RATE: batches consumed by waiting, model untouched
  std::vector<int64_t> corruptSamples;  // --skip-corrupt: samples whose files this process replaced
};

// How many optimizer steps a job runs and how the epoch-based schedule maps onto steps.
struct StepPlan {
  int64_t stepsPerEpoch = 0;
  int64_t totalSteps = 0;
  optim::LrSchedule schedule;
};
StepPlan planSteps(const JobConfig& config, int64_t stepsPerEpoch);

// Resolves --device to a torch device; InputError when cuda is asked for and unavailable.
// For cuda it also switches to deterministic GPU kernels (useDeterministicGpuKernels).
c10::Device resolveDevice(const JobConfig& config);

// Deterministic cuDNN/cuBLAS algorithms, no autotuning, and an error from any kernel that has no
// deterministic implementation: on a GPU the kernels' choice is part of the job's result.
void useDeterministicGpuKernels();

}  // namespace tl::train
