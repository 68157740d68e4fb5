// EstExecutor::changeLayout: a new set of members and a new placement at a step boundary.
#include <ATen/ATen.h>

#include "common/check.h"
#include "est/context_exchange.h"
#include "est/executor.h"
#include "est/local_round.h"

namespace tl::est {

void EstExecutor::changeLayout(Placement placement, comm::Communicator* host, comm::Communicator* device) {
  TL_CHECK(inJob(), "changeLayout: this process already left the job");
  TL_CHECK(EstFibers::currentEst() < 0, "changeLayout: called from an EST's fiber");
  TL_CHECK_EQ(placement.logicalWorkers(), placement_.logicalWorkers(), "a layout change keeps the job's ESTs");
  TL_CHECK((host == nullptr) == (device == nullptr), "changeLayout: host and device communicators go together");
  if (host) TL_CHECK_EQ(placement.processes(), host->size(), "placement does not match the new communicator");
  // The fibers and loader of the old local ESTs end here; run() starts new ones if needed.
  endRound();
  comm::Communicator& old = *host_;
  std::vector<EstContext> all = gatherContexts(old, placement_, local_, -1);

  // A member that held no EST and now holds some receives the replica from EST 0's owner.
  at::Tensor joins = at::full({1}, int(placement_.count(old.rank()) == 0 && host && placement.count(host->rank()) > 0), at::kInt);
  old.allreduce(joins, comm::ReduceOp::Max);
  if (joins.item<int>() != 0) {
    const int root = placement_.owner(0);
    JobState mine;
    if (old.rank() == root) mine = captureReplica();
    JobState got;
    got.model = broadcastNamedTensors(old, mine.model, root);
    got.optimizer = broadcastNamedTensors(old, mine.optimizer, root);
    got.reducer = broadcastNamedTensors(old, mine.reducer, root);
    at::Tensor steps = at::full({1}, stepsDone_, at::kLong);
    old.broadcast(steps, root);
    got.stepsDone = steps.item<int64_t>();
    if (placement_.count(old.rank()) == 0) loadReplicaState(got);
  }

  placement_ = std::move(placement);
  host_ = host;
  local_.clear();
  if (!host) return;  // this member left: run() returns at this boundary
  for (int est : placement_.localEsts(host->rank())) {
    local_.push_back(std::move(all.at(size_t(est))));
    if (!replica_->device.is_cuda()) local_.back().deviceRngState = at::Tensor();
  }
  // The reducer moves to the new members' communicator with the state later steps need.
  if (device != replica_->deviceComm) replica_->useReducer(config_.reduction, *device, config_.bucketBytes);
}

}  // namespace tl::est
