// The job state at a step boundary: capture (for checkpoints) and restore.
#include <ATen/ATen.h>

#include "common/check.h"
#include "est/context_exchange.h"
#include "est/executor.h"

namespace tl::est {

JobState EstExecutor::captureState(int root) {
  TL_CHECK(inJob(), "captureState: this process is not a member of the job");
  JobState s = captureReplica();
  s.contexts = gatherContexts(*host_, placement_, local_, root);
  return s;
}

JobState EstExecutor::captureReplica() const {
  JobState s;
  s.stepsDone = stepsDone_;
  for (auto& [name, t] : models::stateDict(*replica_->model)) s.model.emplace_back(name, t.detach().to(at::kCPU).clone());
  for (auto& [name, t] : replica_->optimizer->state()) s.optimizer.emplace_back(name, t.to(at::kCPU).clone());
  for (auto& [name, t] : replica_->reducer->state()) s.reducer.emplace_back(name, t.to(at::kCPU).clone());
  return s;
}

void EstExecutor::loadReplicaState(const JobState& state) {
  at::NoGradGuard noGrad;
  auto current = models::stateDict(*replica_->model);
  TL_REQUIRE(current.size() == state.model.size(), "checkpoint holds ", state.model.size(),
             " model tensors but the model has ", current.size());
  for (size_t i = 0; i < current.size(); ++i) {
    TL_REQUIRE(current[i].first == state.model[i].first && current[i].second.sizes() == state.model[i].second.sizes(),
               "checkpoint tensor '", state.model[i].first, "' does not match the model's '", current[i].first, "'");
    current[i].second.copy_(state.model[i].second);
  }
  replica_->optimizer->loadState(state.optimizer);
  if (replica_->reducer) replica_->reducer->loadState(state.reducer);
  stepsDone_ = state.stepsDone;
}

void EstExecutor::restore(const JobState& state) {
  TL_CHECK_EQ(int(state.contexts.size()), placement_.logicalWorkers(), "restore needs every EST's context");
  loadReplicaState(state);
  for (auto& c : local_) {
    const EstContext& saved = state.contexts.at(size_t(c.logicalRank));
    TL_CHECK_EQ(saved.logicalRank, c.logicalRank);
    c = saved;
    if (!replica_->device.is_cuda()) c.deviceRngState = at::Tensor();
  }
}

}  // namespace tl::est
