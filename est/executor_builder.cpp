#include "est/executor_builder.h"

#include <ATen/Parallel.h>
#include <torch/utils.h>

#include "common/check.h"
#include "est/local_batches.h"
#include "runtime/optim/decay_groups.h"
#include "runtime/train/model_check.h"
#include "runtime/train/out_of_memory.h"

namespace tl::est {
namespace {

// The one place that turns the job's device into a step backend.
std::unique_ptr<StepBackend> createBackend(const JobConfig& job, Replica& replica, bool backwardThread) {
  if (job.device.isSimulated()) return createSimulatedBackend(job.device.simRate);
  return createTrainingBackend(replica, job.overlap, backwardThread, job.microBatches);
}

}  // namespace

ExecutorBuilder& ExecutorBuilder::layout(Placement placement, comm::Communicator& host,
                                         comm::Communicator& device) {
  placement_ = std::move(placement);
  host_ = &host;
  device_ = &device;
  return *this;
}

EstExecutor::Parts ExecutorBuilder::parts() {
  TL_CHECK(placement_ && host_ && device_, "ExecutorBuilder: layout() not given");
  EstExecutor::Parts p{job_, *placement_};
  JobConfig& config = p.config;
  validate(config);
  TL_CHECK_EQ(p.placement.processes(), host_->size(), "placement does not match the communicator");
  if (config.logicalWorkers == 0) config.logicalWorkers = p.placement.logicalWorkers();
  TL_CHECK_EQ(config.logicalWorkers, p.placement.logicalWorkers(), "placement does not match the job's N");
  p.host = host_;
  p.replica = std::make_unique<Replica>();
  Replica& r = *p.replica;
  r.device = train::resolveDevice(config);
  at::set_num_threads(config.computeThreads);
  // Running out of memory in any of these is one line naming the part (train::whileBuilding).
  train::whileBuilding("the data loader", [&] { p.data = train::openJobData(config); });
  train::adaptModelToData(config, *p.data.train);
  if (config.evalEvery > 0) train::resolveEvalBatches(config, *p.data.test);  // --eval-batches

  // Same seed on every process: identical initial parameters (DDP then broadcasts rank 0's).
  torch::manual_seed(config.seed);
  train::whileBuilding(train::describeModel(config.model), [&] {
    r.model = models::createModel(config.model);
    r.model->to(r.device);
  });
  r.model->train();
  train::checkModelOnData(*r.model, config.model, *p.data.train, r.device);  // --model-file only
  train::whileBuilding("the optimizer", [&] {
    r.optimizer = optim::createOptimizer(config.optimizer, r.model->parameters());
    if (config.weightDecayOn != "all" || !config.noDecay.empty()) {
      std::vector<optim::NamedShape> shapes;
      for (const auto& p : r.model->named_parameters()) shapes.push_back({p.key(), p.value().dim()});
      r.optimizer->setDecay(optim::decayMask(shapes, config.weightDecayOn, config.noDecay));
    }
  });
  train::whileBuilding("the gradient reducer",
                       [&] { r.useReducer(config.reduction, *device_, config.bucketBytes); });
  p.backend = createBackend(config, r, backwardThread_);

  const int n = p.placement.logicalWorkers();
  data::BatchStream probe = shardStream(config, p.data.train->size(), n, 0);
  p.plan = train::planSteps(config, probe.batchesPerEpoch());
  // The schedule's decay length as resolved (the last step unless given): what the summary and
  // checkpoints record (a job that is all warm-up has none to record).
  auto& s = config.schedule;
  if (s.inSteps() && s.decaySteps < 0 && s.kind != "constant" &&
      p.plan.schedule.decaySteps > std::max<int64_t>(0, s.warmupSteps))
    s.decaySteps = p.plan.schedule.decaySteps;
  for (int est : p.placement.localEsts(host_->rank())) {
    p.local.push_back(initialContext(est, config.seed, r.device));
  }
  return p;
}

}  // namespace tl::est
