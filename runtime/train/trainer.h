// Data-parallel training with DDP's semantics: one worker per process, parameters broadcast
// from rank 0 at the start, rank 0's buffers broadcast before every forward, gradients
// averaged over all ranks in buckets.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dataload/loader.h"
#include "runtime/comm/communicator.h"
#include "runtime/job_config.h"
#include "runtime/models/model.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/reduce/gradient_reducer.h"
#include "runtime/train/data_setup.h"
#include "runtime/train/metrics.h"

namespace tl::train {

struct TrainResult {
  int64_t steps = 0;
  int64_t epochsCompleted = 0;
  double finalLoss = 0;        // mean loss over all workers of the last step
  double trainAccuracy = 0;    // over the last (possibly partial) epoch
  bool evaluated = false;
  double testAccuracy = 0;
  double testLoss = 0;
  double imagesPerSecond = 0;  // all workers together, over the whole run
  double wallSeconds = 0;
  std::string paramsSha256;
  std::vector<EpochSummary> epochs;
};

// How many optimizer steps a job runs and how the epoch-based schedule maps onto steps.
struct StepPlan {
  int64_t stepsPerEpoch = 0;
  int64_t totalSteps = 0;
  optim::LrSchedule schedule;
};
StepPlan planSteps(const JobConfig& config, int64_t stepsPerEpoch);

class DataParallelTrainer {
 public:
  // Opens the data and builds model, optimizer and reducer. Makes no collective calls, so
  // every rank can report its own bad input before the job starts. `comm` carries host
  // tensors (MPI); `deviceComm` the model's tensors (the same communicator on CPU, NCCL on GPUs).
  DataParallelTrainer(JobConfig config, comm::Communicator& comm, comm::Communicator& deviceComm);
  ~DataParallelTrainer();

  // Trains (collective over all ranks). Rank 0 logs progress and writes `metrics`.
  TrainResult run(MetricsLog& metrics);

  const JobConfig& config() const { return config_; }
  models::Model& model() { return *model_; }
  const StepPlan& plan() const { return plan_; }

 private:
  JobConfig config_;
  comm::Communicator& comm_;
  comm::Communicator& deviceComm_;
  c10::Device device_;
  JobData data_;
  std::shared_ptr<models::Model> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<reduce::GradientReducer> reducer_;
  StepPlan plan_;
};

// Resolves --device to a torch device; InputError when cuda is asked for and unavailable.
c10::Device resolveDevice(const JobConfig& config);

}  // namespace tl::train
