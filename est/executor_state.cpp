// The job state at a step boundary: capture (for checkpoints), the snapshot tl-run's recovery
// keeps of what changes outside the optimizer update, and restore.
#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <optional>
#include <unordered_set>

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

JobState EstExecutor::captureReplica(bool copies) const {
  JobState s;
  s.stepsDone = stepsDone_;
  // Without copies: the live tensors (CPU) or their CPU copies (a device), for reading at once.
  auto cpu = [copies](const at::Tensor& t) {
    at::Tensor c = t.detach().to(at::kCPU);
    return copies ? c.clone() : c;
  };
  for (auto& [name, t] : models::stateDict(*replica_->model)) s.model.emplace_back(name, cpu(t));
  for (auto& [name, t] : replica_->optimizer->state()) s.optimizer.emplace_back(name, cpu(t));
  for (auto& [name, t] : replica_->reducer->state()) s.reducer.emplace_back(name, cpu(t));
  return s;
}

BoundarySnapshot EstExecutor::snapshotBoundary(int64_t stepsDone) {
  TL_CHECK(inJob(), "snapshotBoundary: this process is not a member of the job");
  BoundarySnapshot b;
  b.stepsDone = stepsDone;
  // Copies on the replica's device: no host synchronisation while healthy.
  std::unordered_set<const void*> isBuffer;
  for (const at::Tensor& t : replica_->model->buffers()) isBuffer.insert(t.unsafeGetTensorImpl());
  for (const auto& [name, t] : models::stateDict(*replica_->model)) {
    if (isBuffer.count(t.unsafeGetTensorImpl())) b.buffers.emplace_back(name, t.detach().clone());
  }
  for (auto& [name, t] : replica_->reducer->state()) b.reducer.emplace_back(name, t.clone());
  b.contexts = gatherContexts(*host_, placement_, local_, -1);
  return b;
}

void EstExecutor::markUpdated() {
  if (!replica_->device.is_cuda()) return;
  const c10::impl::VirtualGuardImpl impl(replica_->device.type());
  if (!updated_) updated_ = std::make_shared<c10::Event>(replica_->device.type());
  updated_->record(impl.getStream(replica_->device));
}

JobState EstExecutor::stateAt(const BoundarySnapshot& b) const {
  TL_CHECK(!b.empty(), "stateAt: an empty snapshot");
  // On a GPU the training stream may wait behind a collective that never completes (a lost
  // peer): the copies run on a side stream that waits only for the last update.
  std::optional<c10::StreamGuard> side;
  if (replica_->device.is_cuda()) {
    const c10::impl::VirtualGuardImpl impl(replica_->device.type());
    const c10::Stream stream = impl.getStreamFromGlobalPool(replica_->device);
    if (updated_) updated_->block(stream);
    side.emplace(stream);
  }
  const auto toCpu = [](const at::Tensor& t) {
    return t.detach().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
  };
  JobState s;
  s.stepsDone = b.stepsDone;
  size_t next = 0;
  for (const auto& [name, t] : models::stateDict(*replica_->model)) {
    if (next < b.buffers.size() && b.buffers[next].first == name) {
      s.model.emplace_back(name, toCpu(b.buffers[next++].second));
    } else {
      s.model.emplace_back(name, toCpu(t));
    }
  }
  TL_CHECK_EQ(next, b.buffers.size(), "stateAt: the snapshot's buffers do not match the model");
  for (auto& [name, t] : replica_->optimizer->state()) s.optimizer.emplace_back(name, toCpu(t));
  for (const auto& [name, t] : b.reducer) s.reducer.emplace_back(name, toCpu(t));
  s.contexts = b.contexts;
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
