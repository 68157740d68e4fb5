// WorldState: where every rank is, the baton, and meeting in collectives.
#include "runtime/comm/inmemory/inmemory_detail.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include <cstring>

#include "common/check.h"

namespace tl::comm::detail {

namespace {

at::Tensor cpuGeneratorState() {
  at::Generator gen = at::globalContext().defaultGenerator(at::kCPU);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void setCpuGeneratorState(const at::Tensor& state) {
  at::Generator gen = at::globalContext().defaultGenerator(at::kCPU);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// The generator a fresh process starts with.
at::Tensor freshProcessGeneratorState() {
  return at::make_generator<at::CPUGeneratorImpl>(c10::default_rng_seed_val).get_state();
}

}  // namespace

WorldState::WorldState(int size, const InMemoryOptions& options)
    : size_(size),
      options_(options),
      worldGroup_(std::make_shared<Group>()),
      places_(size, Place::NotJoined),
      waitingOn_(size, nullptr),
      waitingForMessage_(size, false),
      threads_(size) {
  for (int r = 0; r < size; ++r) worldGroup_->worldRanks.push_back(r);
  if (options_.serialized && options_.perRankCpuGenerator) {
    generatorAtCreation_ = cpuGeneratorState();
    const at::Tensor fresh = freshProcessGeneratorState();
    for (int r = 0; r < size; ++r) generatorStates_.push_back(fresh.clone());
  }
  // Rank 0 holds the baton first; a rank that has not joined yet counts as runnable.
  batonHolder_ = options_.serialized ? 0 : kNobody;
}

void WorldState::join(int rank) {
  std::unique_lock<std::mutex> lock(mutex_);
  TL_CHECK(rank >= 0 && rank < size_, "rank ", rank, " cannot join an in-memory world of size ",
           size_);
  TL_CHECK(places_[rank] == Place::NotJoined, "rank ", rank, " joined an in-memory world twice");
  threads_[rank] = std::this_thread::get_id();
  places_[rank] = Place::Runnable;
  takeBaton(lock, rank);
}

void WorldState::leave(int rank) {
  std::unique_lock<std::mutex> lock(mutex_);
  checkCallerLocked(rank, "leave");
  places_[rank] = Place::Left;
  if (options_.serialized) releaseBaton(rank);
  bool everyoneLeft = true;
  for (Place place : places_) everyoneLeft = everyoneLeft && place == Place::Left;
  if (everyoneLeft && generatorAtCreation_.defined()) setCpuGeneratorState(generatorAtCreation_);
}

void WorldState::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (worldFailure_) return;
  worldFailure_ = std::make_exception_ptr(Error("in-memory world aborted: " + reason));
  wakeWaiting(nullptr);
  changed_.notify_all();
}

void WorldState::checkCaller(int worldRank, const char* operation) {
  std::lock_guard<std::mutex> lock(mutex_);
  checkCallerLocked(worldRank, operation);
}

void WorldState::checkCallerLocked(int worldRank, const char* operation) const {
  TL_CHECK(places_[worldRank] == Place::Runnable, "in-memory ", operation, " on rank ", worldRank,
           ", which has not joined or has left its world");
  TL_CHECK(threads_[worldRank] == std::this_thread::get_id(), "in-memory ", operation,
           " on rank ", worldRank, " from a thread other than the one that joined as that rank");
  TL_CHECK(!options_.serialized || batonHolder_ == worldRank, "in-memory ", operation, " on rank ",
           worldRank, " without the baton (held by ", batonHolder_, ")");
}

std::shared_ptr<Round> WorldState::meet(Group& group, int groupRank, std::uint64_t& sequence,
                                        const Meeting& meeting, const CollectiveOptions& options) {
  // (The communicator resolved an unset timeout to its own.)
  const std::chrono::milliseconds timeout = options.timeout.value_or(kDefaultCollectiveTimeout);
  const Clock::time_point deadline = deadlineAfter(timeout);
  const int me = group.worldRanks.at(groupRank);
  std::unique_lock<std::mutex> lock(mutex_);
  throwIfFailed(group);

  const std::uint64_t mySequence = sequence++;
  std::shared_ptr<Round>& slot = group.pending[mySequence];
  if (!slot) {
    slot = std::make_shared<Round>();
    slot->signature = meeting.signature;
    slot->firstCaller = groupRank;
    slot->present.assign(group.size(), false);
  } else if (slot->signature != meeting.signature) {
    failGroup(group, std::make_exception_ptr(Error(
                         str("in-memory communicator: members called different collectives: rank ",
                             slot->firstCaller, " called ", slot->signature, ", rank ", groupRank,
                             " called ", meeting.signature,
                             "; this communicator is unusable from now on"))));
    throwIfFailed(group);
  }
  std::shared_ptr<Round> round = slot;
  meeting.contribute(*round);
  round->present[groupRank] = true;
  round->arrived += 1;

  if (round->arrived == group.size()) {
    try {
      meeting.complete(*round);
    } catch (...) {
      failGroup(group, std::current_exception());
      throw;
    }
    round->done = true;
    group.pending.erase(mySequence);
    wakeWaiting(&group);
    changed_.notify_all();
    return round;
  }

  places_[me] = Place::Waiting;
  waitingOn_[me] = &group;
  if (options_.serialized) releaseBaton(me);
  const auto over = [&] { return round->done || group.failure || worldFailure_; };
  const bool inTime = deadline == Clock::time_point::max()
                          ? (changed_.wait(lock, over), true)
                          : changed_.wait_until(lock, deadline, over);
  if (!inTime) {
    std::string missing;
    for (int r = 0; r < group.size(); ++r)
      if (!round->present[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    failGroup(group, std::make_exception_ptr(TimeoutError(
                         timeoutMessage("inmemory", meeting.signature, groupRank, group.size(),
                                        timeout) +
                         "; members that had not arrived: " + missing)));
  }
  if (places_[me] == Place::Waiting) places_[me] = Place::Runnable;
  waitingOn_[me] = nullptr;
  takeBaton(lock, me);
  throwIfFailed(group);
  return round;
}

void WorldState::post(Group& group, int from, int to, int tag, const at::Tensor& tensor) {
  at::Tensor copy = at::empty({std::int64_t(tensor.nbytes())}, at::kByte);
  if (tensor.nbytes() > 0) std::memcpy(copy.data_ptr(), tensor.data_ptr(), tensor.nbytes());
  std::lock_guard<std::mutex> lock(mutex_);
  throwIfFailed(group);
  const Group::Route route{from, to, tag};
  group.mailbox[route][group.sent[route]++] = std::move(copy);
  // Only a receiver waiting for a message: a member waiting in a meeting stays asleep.
  const int receiver = group.worldRanks.at(to);
  if (places_[receiver] == Place::Waiting && waitingOn_[receiver] == &group && waitingForMessage_[receiver])
    places_[receiver] = Place::Runnable;
  changed_.notify_all();
}

bool WorldState::take(Group& group, int from, int to, int tag, std::uint64_t number, const at::Tensor& into,
                      bool wait, Clock::time_point deadline, std::chrono::milliseconds timeout,
                      const std::string& what) {
  std::unique_lock<std::mutex> lock(mutex_);
  throwIfFailed(group);
  std::map<std::uint64_t, at::Tensor>& messages = group.mailbox[{from, to, tag}];
  if (messages.count(number) == 0) {
    if (!wait) return false;
    const int me = group.worldRanks.at(to);
    places_[me] = Place::Waiting;
    waitingOn_[me] = &group;
    waitingForMessage_[me] = true;
    if (options_.serialized) releaseBaton(me);
    const auto over = [&] { return messages.count(number) > 0 || group.failure || worldFailure_; };
    const bool inTime = deadline == Clock::time_point::max() ? (changed_.wait(lock, over), true)
                                                             : changed_.wait_until(lock, deadline, over);
    if (!inTime) {
      failGroup(group, std::make_exception_ptr(TimeoutError(
                           timeoutMessage("inmemory", what, to, group.size(), timeout) + "; no message came")));
    }
    if (places_[me] == Place::Waiting) places_[me] = Place::Runnable;
    waitingOn_[me] = nullptr;
    waitingForMessage_[me] = false;
    takeBaton(lock, me);
    throwIfFailed(group);
  }
  const auto it = messages.find(number);
  const at::Tensor message = std::move(it->second);
  messages.erase(it);
  if (message.nbytes() != into.nbytes()) {
    failGroup(group, std::make_exception_ptr(Error(str("inmemory ", what, ": rank ", from, " sent ", message.nbytes(),
                                                       " bytes; this communicator is unusable from now on"))));
    throwIfFailed(group);
  }
  if (message.nbytes() > 0) std::memcpy(into.data_ptr(), message.data_ptr(), message.nbytes());
  return true;
}

void WorldState::abandon(Group& group, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  failGroup(group, std::make_exception_ptr(Error(str("inmemory ", what, " was abandoned before it completed"))));
}

void WorldState::throwIfFailed(const Group& group) const {
  if (worldFailure_) std::rethrow_exception(worldFailure_);
  if (group.failure) std::rethrow_exception(group.failure);
}

void WorldState::failGroup(Group& group, std::exception_ptr failure) {
  if (!group.failure) group.failure = std::move(failure);
  wakeWaiting(&group);
  changed_.notify_all();
}

void WorldState::wakeWaiting(const Group* group) {
  for (int r = 0; r < size_; ++r) {
    if (places_[r] != Place::Waiting || (group != nullptr && waitingOn_[r] != group)) continue;
    places_[r] = Place::Runnable;
  }
  // Ranks woken by a failure (not by a completing member, who keeps the baton) may find nobody
  // holding it.
  if (options_.serialized && batonHolder_ == kNobody) passBatonAfter(lastBatonHolder_);
}

void WorldState::releaseBaton(int rank) {
  TL_CHECK_EQ(batonHolder_, rank, "in-memory world: the baton passes on only from its holder");
  if (!generatorStates_.empty()) generatorStates_[rank] = cpuGeneratorState();
  batonHolder_ = kNobody;
  lastBatonHolder_ = rank;
  passBatonAfter(rank);
}

void WorldState::passBatonAfter(int rank) {
  for (int step = 1; step <= size_; ++step) {
    const int next = (rank + step) % size_;
    if (places_[next] == Place::NotJoined || places_[next] == Place::Runnable) {
      batonHolder_ = next;
      changed_.notify_all();
      return;
    }
  }
}

void WorldState::takeBaton(std::unique_lock<std::mutex>& lock, int rank) {
  if (!options_.serialized) return;
  if (batonHolder_ == kNobody) passBatonAfter(lastBatonHolder_);
  changed_.wait(lock, [&] { return batonHolder_ == rank; });
  if (!generatorStates_.empty()) setCpuGeneratorState(generatorStates_[rank]);
}

}  // namespace tl::comm::detail
