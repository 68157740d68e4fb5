// InMemoryCommunicator: the collectives as meetings of threads in a WorldState, and the factory.
#include "runtime/comm/inmemory/inmemory_communicator.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <ATen/ATen.h>

#include "common/check.h"
#include "runtime/comm/inmemory/inmemory_detail.h"

namespace tl::comm {

namespace {

using detail::describeTensor;
using detail::Group;
using detail::Meeting;
using detail::Round;
using detail::WorldState;

// Misuse is refused on the caller's rank before it arrives anywhere, so the communicator stays
// usable (as with MPI).
void checkInMemoryTensor(const at::Tensor& tensor, const char* operation, bool mustBeContiguous) {
  TL_CHECK(tensor.defined(), "inmemory ", operation, " got an undefined tensor");
  TL_CHECK(tensor.device().is_cpu(), "inmemory ", operation, " needs a CPU tensor, got ",
           describeTensor(tensor));
  TL_CHECK(!mustBeContiguous || tensor.is_contiguous(), "inmemory ", operation,
           " works in place on a contiguous tensor, got a non-contiguous one (",
           describeTensor(tensor), ")");
}

void checkReducible(const at::Tensor& tensor) {
  const at::ScalarType type = tensor.scalar_type();
  TL_CHECK(type == at::kFloat || type == at::kDouble || type == at::kInt || type == at::kLong ||
               type == at::kByte,
           "inmemory allreduce supports float32, float64, int32, int64 and uint8, got ",
           describeTensor(tensor));
}

// Rank order, one member at a time: the same rounding whatever order the threads arrived in.
at::Tensor reduceInRankOrder(const std::vector<at::Tensor>& inputs, ReduceOp op) {
  at::Tensor result = inputs.front().clone();
  for (std::size_t r = 1; r < inputs.size(); ++r) {
    const at::Tensor next = inputs[r].view(result.sizes());
    switch (op) {
      case ReduceOp::Sum:
        result.add_(next);
        break;
      case ReduceOp::Max:
        result = at::maximum(result, next);
        break;
      case ReduceOp::Min:
        result = at::minimum(result, next);
        break;
    }
  }
  return result;
}

std::string shapeOf(const at::Tensor& tensor) {
  std::string shape = "[";
  for (std::int64_t d = 0; d < tensor.dim(); ++d)
    shape += (d > 0 ? ", " : "") + std::to_string(tensor.size(d));
  return shape + "]";
}

class Completed final : public PendingCollective {
 public:
  bool test() override { return true; }
  void wait() override {}
};

// Threading and errors: see inmemory_communicator.h. Inputs are not copied on arrival: their
// owners are blocked in the collective until the last member has computed the results (or the
// communicator failed, and then nobody reads them).
class InMemoryCommunicator final : public Communicator {
 public:
  InMemoryCommunicator(std::shared_ptr<WorldState> world, std::shared_ptr<Group> group,
                       int groupRank)
      : world_(std::move(world)), group_(std::move(group)), rank_(groupRank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string backend() const override { return "inmemory"; }

  void allreduce(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options) override {
    enter("allreduce");
    checkInMemoryTensor(tensor, "allreduce", /*mustBeContiguous=*/true);
    checkReducible(tensor);
    Meeting meeting;
    meeting.signature = str("allreduce(", toString(op), ", ", describeTensor(tensor), ")");
    meeting.contribute = [&](Round& round) { input(round) = tensor; };
    meeting.complete = [op](Round& round) { round.result = reduceInRankOrder(round.inputs, op); };
    const std::shared_ptr<Round> round = meet(meeting, options);
    tensor.copy_(round->result.view(tensor.sizes()));
  }

  // Blocking, as every collective here: the handle comes back complete.
  std::unique_ptr<PendingCollective> startReduceScatter(at::Tensor& tensor,
                                                        const CollectiveOptions& options) override {
    enter("reduceScatter");
    checkInMemoryTensor(tensor, "reduceScatter", /*mustBeContiguous=*/true);
    checkReducible(tensor);
    Meeting meeting;
    meeting.signature = str("reduceScatter(", describeTensor(tensor), ")");
    meeting.contribute = [&](Round& round) { input(round) = tensor; };
    meeting.complete = [](Round& round) {
      round.result = reduceInRankOrder(round.inputs, ReduceOp::Sum);
    };
    const std::shared_ptr<Round> round = meet(meeting, options);
    const Segment mine = segmentOf(tensor.numel(), size(), rank_);
    tensor.view({-1}).narrow(0, mine.offset, mine.length)
        .copy_(round->result.view({-1}).narrow(0, mine.offset, mine.length));
    return std::make_unique<Completed>();
  }

  std::unique_ptr<PendingCollective> startAllgatherSegments(
      at::Tensor& tensor, const CollectiveOptions& options) override {
    enter("allgatherSegments");
    checkInMemoryTensor(tensor, "allgatherSegments", /*mustBeContiguous=*/true);
    checkReducible(tensor);
    Meeting meeting;
    meeting.signature = str("allgatherSegments(", describeTensor(tensor), ")");
    meeting.contribute = [&](Round& round) { input(round) = tensor; };
    const int members = size();
    meeting.complete = [members](Round& round) {
      at::Tensor whole = at::empty_like(round.inputs.front()).view({-1});
      for (int r = 0; r < members; ++r) {
        const Segment theirs = segmentOf(whole.numel(), members, r);
        whole.narrow(0, theirs.offset, theirs.length)
            .copy_(round.inputs[r].view({-1}).narrow(0, theirs.offset, theirs.length));
      }
      round.result = whole;
    };
    const std::shared_ptr<Round> round = meet(meeting, options);
    tensor.view({-1}).copy_(round->result);
    return std::make_unique<Completed>();
  }

  void broadcast(at::Tensor& tensor, int root, const CollectiveOptions& options) override {
    enter("broadcast");
    checkInMemoryTensor(tensor, "broadcast", /*mustBeContiguous=*/true);
    TL_CHECK(root >= 0 && root < size(), "inmemory broadcast from root ", root,
             " on a communicator of size ", size());
    Meeting meeting;
    meeting.signature = str("broadcast(root ", root, ", ", describeTensor(tensor), ")");
    meeting.contribute = [&](Round& round) {
      if (rank_ == root) input(round) = tensor;
    };
    meeting.complete = [root](Round& round) { round.result = round.inputs[root].clone(); };
    const std::shared_ptr<Round> round = meet(meeting, options);
    if (rank_ != root) tensor.copy_(round->result.view(tensor.sizes()));
  }

  at::Tensor allgather(const at::Tensor& tensor, const CollectiveOptions& options) override {
    enter("allgather");
    checkInMemoryTensor(tensor, "allgather", /*mustBeContiguous=*/false);
    Meeting meeting;
    meeting.signature =
        str("allgather(", describeTensor(tensor), " of shape ", shapeOf(tensor), ")");
    meeting.contribute = [&](Round& round) { input(round) = tensor; };
    meeting.complete = [](Round& round) { round.result = at::stack(round.inputs); };
    // Each member gets its own copy: ranks must not share memory they may write to.
    return meet(meeting, options)->result.clone();
  }

  void barrier(const CollectiveOptions& options) override {
    enter("barrier");
    Meeting meeting;
    meeting.signature = "barrier";
    meeting.contribute = [](Round&) {};
    meeting.complete = [](Round&) {};
    meet(meeting, options);
  }

  std::unique_ptr<Communicator> split(int color, int key,
                                      const CollectiveOptions& options) override {
    enter("split");
    Meeting meeting;
    meeting.signature = "split";
    meeting.contribute = [&](Round& round) {
      round.colorAndKey.resize(size());
      round.colorAndKey[rank_] = {color, key};
    };
    const std::vector<int>& worldRanks = group_->worldRanks;
    meeting.complete = [&worldRanks](Round& round) { splitGroup(worldRanks, round); };
    const std::shared_ptr<Round> round = meet(meeting, options);
    if (round->splitGroups[rank_] == nullptr) return nullptr;
    auto child = std::make_unique<InMemoryCommunicator>(world_, round->splitGroups[rank_],
                                                        round->splitRanks[rank_]);
    child->setTimeout(timeout());
    return child;
  }

  // Sends are buffered (a copy now, complete at once); a receive completes when it has taken
  // its message.
  bool pointToPoint() const override { return true; }
  std::unique_ptr<PendingCollective> startSend(const at::Tensor& tensor, int peer, int tag,
                                               const CollectiveOptions&) override {
    checkPointToPoint("send", tensor, peer, tag);
    world_->post(*group_, rank_, peer, tag, tensor);
    return std::make_unique<Completed>();
  }
  std::unique_ptr<PendingCollective> startReceive(at::Tensor& tensor, int peer, int tag,
                                                  const CollectiveOptions& options) override {
    checkPointToPoint("receive", tensor, peer, tag);
    const std::uint64_t number = received_[{peer, rank_, tag}]++;
    return std::make_unique<Receive>(*this, tensor, peer, tag, number, timeoutFor(options));
  }

 private:
  // Members with the same color >= 0 form a group, ordered by (key, old rank).
  static void splitGroup(const std::vector<int>& worldRanks, Round& round) {
    const int size = static_cast<int>(worldRanks.size());
    std::map<int, std::vector<std::tuple<int, int>>> byColor;  // color -> (key, old rank)
    for (int r = 0; r < size; ++r) {
      const auto [color, key] = round.colorAndKey[r];
      if (color >= 0) byColor[color].emplace_back(key, r);
    }
    round.splitGroups.assign(size, nullptr);
    round.splitRanks.assign(size, -1);
    for (auto& [color, members] : byColor) {
      std::sort(members.begin(), members.end());
      auto group = std::make_shared<Group>();
      for (std::size_t newRank = 0; newRank < members.size(); ++newRank) {
        const int oldRank = std::get<1>(members[newRank]);
        group->worldRanks.push_back(worldRanks[oldRank]);
        round.splitGroups[oldRank] = group;
        round.splitRanks[oldRank] = static_cast<int>(newRank);
      }
    }
  }

  at::Tensor& input(Round& round) const {
    round.inputs.resize(size());
    return round.inputs[rank_];
  }

  void enter(const char* operation) const {
    world_->checkCaller(group_->worldRanks[rank_], operation);
  }

  std::shared_ptr<Round> meet(const Meeting& meeting, const CollectiveOptions& options) {
    return world_->meet(*group_, rank_, nextSequence_, meeting,
                        CollectiveOptions{timeoutFor(options)});
  }

  void checkPointToPoint(const char* operation, const at::Tensor& tensor, int peer, int tag) const {
    enter(operation);
    checkInMemoryTensor(tensor, operation, /*mustBeContiguous=*/true);
    TL_CHECK(peer >= 0 && peer < size() && peer != rank_, "inmemory ", operation, " with rank ", peer,
             " from rank ", rank_, " of ", size());
    TL_CHECK(tag >= 0 && tag < kPointToPointTags, "inmemory ", operation, " with tag ", tag);
  }

  class Receive final : public PendingCollective {
   public:
    Receive(InMemoryCommunicator& comm, at::Tensor tensor, int peer, int tag, std::uint64_t number,
            std::chrono::milliseconds timeout)
        : comm_(comm), tensor_(std::move(tensor)), peer_(peer), tag_(tag), number_(number), timeout_(timeout),
          deadline_(detail::deadlineAfter(timeout)),
          what_(str("receive from rank ", peer, " (tag ", tag, ", ", describeTensor(tensor_), ")")) {}
    ~Receive() override {
      if (!done_) comm_.world_->abandon(*comm_.group_, what_);
    }
    bool test() override { return done_ || (done_ = take(false)); }
    void wait() override {
      if (done_) return;
      done_ = true;  // whatever happens next, this handle no longer waits
      take(true);
    }

   private:
    bool take(bool wait) {
      comm_.enter("receive");
      return comm_.world_->take(*comm_.group_, peer_, comm_.rank_, tag_, number_, tensor_, wait, deadline_, timeout_,
                                what_);
    }
    InMemoryCommunicator& comm_;
    at::Tensor tensor_;
    int peer_, tag_;
    std::uint64_t number_;
    std::chrono::milliseconds timeout_;
    detail::Clock::time_point deadline_;
    std::string what_;
    bool done_ = false;
  };

  std::shared_ptr<WorldState> world_;
  std::shared_ptr<Group> group_;
  int rank_;
  std::uint64_t nextSequence_ = 0;
  std::map<Group::Route, std::uint64_t> received_;  // receives started, by route
};

class InMemoryWorldImpl final : public InMemoryWorld {
 public:
  InMemoryWorldImpl(int size, const InMemoryOptions& options)
      : state_(std::make_shared<WorldState>(size, options)) {}

  int size() const override { return state_->size(); }

  std::unique_ptr<Communicator> join(int rank) override {
    state_->join(rank);
    return detail::makeInMemoryCommunicator(state_, state_->worldGroup(), rank);
  }

  void leave(int rank) override { state_->leave(rank); }
  void abort(const std::string& reason) override { state_->abort(reason); }

 private:
  std::shared_ptr<WorldState> state_;
};

}  // namespace

namespace detail {

std::unique_ptr<Communicator> makeInMemoryCommunicator(std::shared_ptr<WorldState> world,
                                                       std::shared_ptr<Group> group,
                                                       int groupRank) {
  return std::make_unique<InMemoryCommunicator>(std::move(world), std::move(group), groupRank);
}

}  // namespace detail

std::shared_ptr<InMemoryWorld> createInMemoryWorld(int size, const InMemoryOptions& options) {
  TL_CHECK_GE(size, 1, "an in-memory world needs at least one rank");
  return std::make_shared<InMemoryWorldImpl>(size, options);
}

}  // namespace tl::comm
