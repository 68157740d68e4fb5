#include <ATen/Context.h>
#include <torch/cuda.h>

#include <cstdlib>

#include <cmath>

#include "common/check.h"
#include "runtime/train/trainer_result.h"

namespace tl::train {

c10::Device resolveDevice(const JobConfig& config) {
  if (!config.device.isCuda()) return c10::Device(c10::kCPU);
  if (!torch::cuda::is_available()) {
    inputError("--device cuda: no CUDA device is available (this libtorch has no CUDA support, "
               "or no GPU is visible to this process)");
  }
  int64_t count = int64_t(torch::cuda::device_count());
  TL_REQUIRE(config.deviceIndex < count, "--device cuda: this process needs GPU ",
             config.deviceIndex, " but only ", count, " are visible");
  useDeterministicGpuKernels();
  return c10::Device(c10::kCUDA, c10::DeviceIndex(config.deviceIndex));
}

void useDeterministicGpuKernels() {
  // cuBLAS reads this when it creates its first handle: fixed workspaces make its reductions
  // deterministic. A value the user set is kept.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setBenchmarkCuDNN(false);      // no autotuning: the same algorithm every run
  at::globalContext().setDeterministicCuDNN(true);   // deterministic convolution algorithms only
  // Any other kernel without a deterministic implementation raises an error instead of
  // quietly breaking the job's reproducibility.
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
}

StepPlan planSteps(const JobConfig& config, int64_t stepsPerEpoch) {
  StepPlan p;
  p.stepsPerEpoch = stepsPerEpoch;
  TL_REQUIRE(stepsPerEpoch > 0, "--batch ", config.batch,
             " leaves no full batch per worker in an epoch (use a smaller batch or keep the last short batch)");
  p.totalSteps = config.steps > 0 || config.epochs == 0 ? config.steps : config.epochs * stepsPerEpoch;
  const auto& s = config.schedule;
  p.schedule.kind = s.kind;
  p.schedule.baseLr = config.optimizer.lr;
  p.schedule.gamma = s.gamma;
  p.schedule.minLr = s.minLr;
  p.schedule.stepSize = std::max<int64_t>(1, std::llround(s.stepEpochs * double(stepsPerEpoch)));
  p.schedule.warmupSteps = std::llround(s.warmupEpochs * double(stepsPerEpoch));
  p.schedule.totalSteps = std::max<int64_t>(1, p.totalSteps - p.schedule.warmupSteps);
  if (s.inSteps()) {
    p.schedule.inSteps = true;
    p.schedule.warmupSteps = std::max<int64_t>(0, s.warmupSteps);
    // Unless given: the job's last step (index T - 1) is the first at --min-lr, as nanoGPT's
    // lr_decay_iters = max_iters.
    p.schedule.decaySteps = s.decaySteps >= 0 ? s.decaySteps : std::max<int64_t>(0, p.totalSteps - 1);
  }
  optim::validate(p.schedule);
  TL_REQUIRE(config.traceFirst == 0 || !config.outputDir.empty(),
             "--trace-steps: needs --output-dir (the trace goes to <output-dir>/trace/)");
  TL_REQUIRE(config.traceLast <= p.totalSteps, "--trace-steps ", config.traceFirst, "-",
             config.traceLast, ": the job has ", p.totalSteps, " step",
             p.totalSteps == 1 ? "" : "s");
  return p;
}

}  // namespace tl::train
