#include "elastic/checkpoint/checkpoint_policy.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "elastic/checkpoint/job_checkpoint.h"

namespace tl::elastic {

void checkpointNow(est::EstExecutor& executor, const std::string& dir,
                   std::optional<data::DataIdentity>* data) {
  auto& comm = executor.comm();
  const auto t0 = std::chrono::steady_clock::now();
  est::JobState state = executor.captureState(0);
  if (comm.rank() == 0) {
    JobCheckpoint ck;
    ck.config = executor.config();
    ck.placement = executor.placement().toString();
    ck.state = std::move(state);
    // Identified once per run: the names and sizes of every file, and a few blocks.
    std::optional<data::DataIdentity> identified;
    if (!data) data = &identified;
    if (!*data) *data = data::identifyData(ck.config.dataset, ck.config.dataDir);
    ck.data = **data;
    writeJobCheckpoint(dir, ck);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    spdlog::info("checkpoint at step {} written to {} ({:.2f} s)", ck.state.stepsDone, dir, s);
  }
  // Nobody goes on (or exits) before the checkpoint is on disk.
  comm.barrier();
}

est::StepAction CheckpointPolicy::afterStep(int64_t stepsDone, est::EstExecutor& executor) {
  auto& comm = executor.comm();
  int requested = options_.stopRequested && options_.stopRequested->load() ? 1 : 0;
  if (comm.size() > 1) {
    // A signal may reach the processes at different steps: all act on the first one to see it.
    at::Tensor flag = at::full({1}, requested, at::kInt);
    comm.allreduce(flag, comm::ReduceOp::Max);
    requested = flag.item<int>();
  }
  const bool stopHere = options_.stopAtStep > 0 && stepsDone == options_.stopAtStep;
  const bool periodic = options_.every > 0 && stepsDone % options_.every == 0;
  if (!options_.dir.empty() && (requested || stopHere || periodic)) {
    checkpointNow(executor, options_.dir, &data_);
    lastCheckpointStep_ = stepsDone;
  }
  if (requested || stopHere) {
    stopped_ = true;
    stoppedBySignal_ = requested != 0;
    return est::StepAction::Stop;
  }
  return est::StepAction::Continue;
}

}  // namespace tl::elastic
