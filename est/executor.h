// The per-process EST executor: runs this process's share of the job's N logical workers as
// fibers over one model replica and one optimizer state, so the job trains exactly as DDP
// with N processes would (with --reduction exact, to the bit, whatever the placement).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "est/est_context.h"
#include "est/loader_tuner.h"
#include "est/placement.h"
#include "runtime/comm/communicator.h"
#include "runtime/job_config.h"
#include "runtime/models/model.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/reduce/gradient_reducer.h"
#include "runtime/train/data_setup.h"
#include "runtime/train/metrics.h"
#include "runtime/train/trainer_result.h"

namespace tl::est {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Everything later steps depend on, at a step boundary. Model, optimizer and reducer state are
// the same on every process; `contexts` holds all N ESTs' contexts (on the gathering rank).
struct JobState {
  int64_t stepsDone = 0;
  NamedTensors model;      // state-dict order
  NamedTensors optimizer;
  NamedTensors reducer;
  std::vector<EstContext> contexts;  // by logical rank
};

// What the caller wants after a step.
enum class StepAction { Continue, Stop };

// Called on every process after every optimizer step, at the step boundary (all ESTs parked,
// all generator states saved). Must make the same decision on every process.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual StepAction afterStep(int64_t stepsDone, class EstExecutor& executor) = 0;
};

class EstExecutor {
 public:
  // Builds data, model, optimizer and reducer. No collective calls, so bad input can be
  // reported by every rank before the job starts.
  EstExecutor(JobConfig config, Placement placement, comm::Communicator& comm,
              comm::Communicator& deviceComm);
  ~EstExecutor();

  // Continues from a saved state instead of the job's start (call before run(); every
  // process passes the same state, with all N contexts).
  void restore(const JobState& state);

  // Lets `tuner` size the loader pool while running (nullptr: the configured size throughout).
  void setLoaderTuner(LoaderTuner* tuner) { tuner_ = tuner; }

  // Trains until the planned number of steps or until the observer says Stop.
  train::TrainResult run(train::MetricsLog& metrics, StepObserver* observer = nullptr);

  // Collective: gathers the job state at the current step boundary onto rank `root`
  // (contexts are empty elsewhere). Only from StepObserver::afterStep or outside run().
  JobState captureState(int root = 0);

  const JobConfig& config() const { return config_; }
  const Placement& placement() const { return placement_; }
  models::Model& model() { return *model_; }
  const train::StepPlan& plan() const { return plan_; }
  int64_t stepsDone() const { return stepsDone_; }
  comm::Communicator& comm() { return comm_; }

 private:
  struct Run;
  JobConfig config_;
  Placement placement_;
  comm::Communicator& comm_;
  comm::Communicator& deviceComm_;
  c10::Device device_;
  train::JobData data_;
  std::shared_ptr<models::Model> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<reduce::GradientReducer> reducer_;
  train::StepPlan plan_;
  std::vector<EstContext> local_;  // this process's ESTs, in logical-rank order
  int64_t stepsDone_ = 0;
  double simRate_ = 0;             // --device sim:RATE: images/s consumed by waiting
  LoaderTuner* tuner_ = nullptr;
};

}  // namespace tl::est
