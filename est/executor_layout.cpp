// EstExecutor::changeLayout: a new set of members and a new placement at a step boundary.
#include <ATen/ATen.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/check.h"
#include "est/context_exchange.h"
#include "est/executor.h"
#include "est/local_round.h"

namespace tl::est {

namespace {

// TL_REPLICA_SENDERS=1: the replica reaches joining members from one sender, as before issue 43.
bool oneSenderWanted() {
  const char* v = std::getenv("TL_REPLICA_SENDERS");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace

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
  lastReplicaSeconds_ = 0;
  lastReplicaBytes_ = 0;
  for (const EstContext& c : all) {
    if (placement.owner(c.logicalRank) != placement_.owner(c.logicalRank))
      lastLayoutBytes_ += int64_t(packContext(c).size());
  }

  // A member that held no EST and now holds some receives the replica: from every member that
  // holds it, point-to-point (issue 43), or from EST 0's owner in broadcasts, as before: where
  // the backend has no point-to-point (NCCL), or TL_REPLICA_SENDERS=1 on any member (to
  // measure against). Every member learns who joins and who sends.
  const bool joining = placement_.count(old.rank()) == 0 && host && placement.count(host->rank()) > 0;
  const at::Tensor flags = old.allgather(at::tensor({int(joining), int(oneSenderWanted())}, at::kInt));
  std::vector<int> joiners, senders;
  bool oneSender = !old.pointToPoint();
  for (int r = 0; r < old.size(); ++r) {
    if (flags[r][0].item<int>() != 0) joiners.push_back(r);
    if (placement_.count(r) > 0) senders.push_back(r);
    oneSender = oneSender || flags[r][1].item<int>() != 0;
  }
  if (!joiners.empty()) {
    const bool sender = placement_.count(old.rank()) > 0;
    // One sender: only the owner of EST 0 and the members that join take part.
    const int root = placement_.owner(0);
    std::unique_ptr<comm::Communicator> party;
    if (oneSender) party = old.split(old.rank() == root || joining ? 0 : -1, old.rank() == root ? 0 : 1 + old.rank());
    at::Tensor replicaBytes = at::zeros({1}, at::kLong);
    if (oneSender ? party != nullptr : sender || joining) {
      const auto began = std::chrono::steady_clock::now();
      JobState mine;
      if (oneSender ? old.rank() == root : sender) mine = captureReplica(/*copies=*/false);  // only read
      JobState got;
      if (oneSender) {
        got.model = broadcastNamedTensors(*party, mine.model, 0);
        got.optimizer = broadcastNamedTensors(*party, mine.optimizer, 0);
        got.reducer = broadcastNamedTensors(*party, mine.reducer, 0);
        at::Tensor steps = at::full({1}, stepsDone_, at::kLong);
        party->broadcast(steps, 0);
        got.stepsDone = steps.item<int64_t>();
      } else {
        const NamedTensors steps = {{"stepsDone", at::full({1}, stepsDone_, at::kLong)}};
        auto parts = sendNamedTensorsFromSenders(old, {mine.model, mine.optimizer, mine.reducer, steps}, senders, joiners);
        got.model = std::move(parts.at(0));
        got.optimizer = std::move(parts.at(1));
        got.reducer = std::move(parts.at(2));
        got.stepsDone = parts.at(3).at(0).second.item<int64_t>();
      }
      if (joining) loadReplicaState(got);
      for (const auto* part : {&got.model, &got.optimizer, &got.reducer}) {
        for (const auto& [name, tensor] : *part) replicaBytes += int64_t(tensor.nbytes());
      }
      lastReplicaSeconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    }
    old.allreduce(replicaBytes, comm::ReduceOp::Max);
    lastReplicaBytes_ = replicaBytes.item<int64_t>();
    lastLayoutBytes_ += lastReplicaBytes_ * int64_t(joiners.size());
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

void EstExecutor::recoverOnSurvivors(const JobState& state, Placement placement, comm::Communicator& host,
                                     comm::Communicator& device) {
  TL_CHECK(EstFibers::currentEst() < 0, "recoverOnSurvivors: called from an EST's fiber");
  TL_CHECK_EQ(placement.logicalWorkers(), placement_.logicalWorkers(), "recovery keeps the job's ESTs");
  TL_CHECK_EQ(int(state.contexts.size()), placement.logicalWorkers(), "recovery needs every EST's context");
  TL_CHECK_EQ(placement.processes(), host.size(), "placement does not match the survivors' communicator");
  endRound();
  placement_ = std::move(placement);
  host_ = &host;
  // A new reducer on the survivors' device communicator; its state comes from `state` below
  // (the old one's may be part-way through the step the loss interrupted).
  replica_->useReducer(config_.reduction, device, config_.bucketBytes);
  loadReplicaState(state);
  local_.clear();
  for (int est : placement_.localEsts(host.rank())) {
    local_.push_back(state.contexts.at(size_t(est)));
    TL_CHECK_EQ(local_.back().logicalRank, est, "recovery: contexts out of order");
    if (!replica_->device.is_cuda()) local_.back().deviceRngState = at::Tensor();
  }
  lastLayoutBytes_ = 0;
  lastReplicaSeconds_ = 0;
  lastReplicaBytes_ = 0;
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
