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
  lastLayoutBytes_ = 0;
  for (const EstContext& c : all) {
    if (placement.owner(c.logicalRank) != placement_.owner(c.logicalRank))
      lastLayoutBytes_ += int64_t(packContext(c).size());
  }

  // A member that held no EST and now holds some receives the replica from EST 0's owner.
  at::Tensor joins = at::full({1}, int(placement_.count(old.rank()) == 0 && host && placement.count(host->rank()) > 0), at::kInt);
  at::Tensor joiners = joins.clone();
  old.allreduce(joiners, comm::ReduceOp::Sum);
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
    int64_t replicaBytes = 0;
    for (const auto* part : {&got.model, &got.optimizer, &got.reducer}) {
      for (const auto& [name, tensor] : *part) replicaBytes += int64_t(tensor.nbytes());
    }
    lastLayoutBytes_ += replicaBytes * joiners.item<int>();
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

void EstExecutor::admit(const std::vector<int>& current, comm::Communicator& host, comm::Communicator& device) {
  TL_CHECK(EstFibers::currentEst() < 0, "admit: called from an EST's fiber");
  TL_CHECK_LE(int(current.size()), host.size(), "admit: the new communicator lacks current members");
  const bool member = host.rank() < int(current.size());
  if (member) {
    TL_CHECK(inJob(), "admit: rank ", host.rank(), " of the widened job is not a current member");
    TL_CHECK_EQ(placement_.processes(), int(current.size()), "admit: the job's current layout differs");
    for (int r = 0; r < placement_.processes(); ++r)
      TL_CHECK_EQ(placement_.count(r), current[size_t(r)], "admit: the job's current layout differs");
  } else {
    endRound();
    local_.clear();  // its ESTs come with the next changeLayout, from their owners
  }
  std::vector<int> counts = current;
  counts.resize(size_t(host.size()), 0);
  placement_ = Placement::withIdleMembers(counts);
  host_ = &host;
  if (&device != replica_->deviceComm) replica_->useReducer(config_.reduction, device, config_.bucketBytes);
}

}  // namespace tl::est
