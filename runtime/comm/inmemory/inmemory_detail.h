// Internals of the in-memory backend shared by its files; not for callers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/comm/collective_wait.h"
#include "runtime/comm/inmemory/inmemory_communicator.h"

namespace tl::comm::detail {

struct Group;

// One collective as the members of a group meet in it: the k-th collective called on the group.
// Filled under the world's mutex; immutable once `done`.
struct Round {
  std::string signature;  // what the first member to arrive called, e.g. "barrier"
  int firstCaller = -1;   // its group rank
  int arrived = 0;
  std::vector<bool> present;  // by group rank: has it arrived
  bool done = false;
  std::vector<at::Tensor> inputs;                  // by group rank, as the collective needs
  std::vector<std::pair<int, int>> colorAndKey;    // split only, by group rank
  // Results, written by the last member to arrive.
  at::Tensor result;
  std::vector<std::shared_ptr<Group>> splitGroups;  // split: each member's new group or null
  std::vector<int> splitRanks;                      // split: each member's rank in it
};

// The members of one communicator (the world's, or one made by split), shared by them.
struct Group {
  std::vector<int> worldRanks;  // by group rank
  std::map<std::uint64_t, std::shared_ptr<Round>> pending;  // rounds not every member reached
  std::exception_ptr failure;   // sticky: set once, thrown by every later call of every member
  // Point-to-point, by (from, to, tag) in group ranks: the messages not taken yet, by their
  // number in the order sent, and how many were sent.
  using Route = std::tuple<int, int, int>;
  std::map<Route, std::map<std::uint64_t, at::Tensor>> mailbox;
  std::map<Route, std::uint64_t> sent;
  int size() const { return static_cast<int>(worldRanks.size()); }
};

// What a collective tells WorldState::meet about itself.
struct Meeting {
  std::string signature;  // must be equal on every member; also names it in errors
  // Runs under the world's mutex on arrival: put this member's share into the round.
  std::function<void(Round&)> contribute;
  // Runs under the world's mutex on the last member's thread: compute the results.
  std::function<void(Round&)> complete;
};

// The state of one world: every rank's place, the baton, the world-wide failure. One mutex and
// one condition variable for everything; worlds are small (a few ranks) and tests only.
class WorldState {
 public:
  WorldState(int size, const InMemoryOptions& options);

  int size() const { return size_; }
  std::shared_ptr<Group> worldGroup() const { return worldGroup_; }

  void join(int rank);
  void leave(int rank);
  void abort(const std::string& reason);

  // Throws tl::Error unless called on `worldRank`'s thread, holding the baton in baton mode.
  // `operation` names the call.
  void checkCaller(int worldRank, const char* operation);

  // The member `groupRank` of `group` arrives at its next round, `sequence` (which counts its
  // calls on `group`, and is advanced when it arrives), waits (without the baton)
  // until every member arrived and the results are there, and returns the round. Throws the
  // world's or the group's failure, or fails the group (tl::TimeoutError when the deadline of
  // `options` passes first, tl::Error when members disagree on the call).
  std::shared_ptr<Round> meet(Group& group, int groupRank, std::uint64_t& sequence,
                              const Meeting& meeting, const CollectiveOptions& options);

  // Point-to-point (group ranks): `from` leaves a copy of `tensor`'s bytes for `to` under `tag`.
  void post(Group& group, int from, int to, int tag, const at::Tensor& tensor);
  // Takes message number `number` (in the order sent, from 0) from `from` to `to` under `tag`
  // into `into` (as many bytes, or the group fails) and returns true; false when it was not
  // sent yet and not `wait`. With `wait` it waits (without the baton) until it is, or fails the
  // group at `deadline` (tl::TimeoutError; `what` names the receive, `timeout` the deadline's
  // length). Receives number their messages in the order they were started, as MPI matches them.
  bool take(Group& group, int from, int to, int tag, std::uint64_t number, const at::Tensor& into, bool wait,
            Clock::time_point deadline, std::chrono::milliseconds timeout, const std::string& what);
  // A receive given up before it completed: the group fails, as an abandoned MPI operation
  // fails its communicator.
  void abandon(Group& group, const std::string& what);

 private:
  enum class Place { NotJoined, Runnable, Waiting, Left };

  void checkCallerLocked(int worldRank, const char* operation) const;
  void throwIfFailed(const Group& group) const;
  void failGroup(Group& group, std::exception_ptr failure);
  // Waiting ranks become runnable: those waiting on `group`, or all when it is null.
  void wakeWaiting(const Group* group);
  // Baton: the holder lets go (its generator is saved) and it passes to the next runnable rank.
  void releaseBaton(int rank);
  void passBatonAfter(int rank);
  void takeBaton(std::unique_lock<std::mutex>& lock, int rank);

  const int size_;
  const InMemoryOptions options_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<Group> worldGroup_;
  std::exception_ptr worldFailure_;
  std::vector<Place> places_;
  std::vector<const Group*> waitingOn_;
  std::vector<bool> waitingForMessage_;  // by world rank: its wait is a take's, not a meeting's
  std::vector<std::thread::id> threads_;
  static constexpr int kNobody = -1;
  int batonHolder_ = 0;
  int lastBatonHolder_ = 0;
  std::vector<at::Tensor> generatorStates_;  // per rank, while it does not hold the baton
  at::Tensor generatorAtCreation_;
};

// The communicator of member `groupRank` of `group` (inmemory_communicator.cpp).
std::unique_ptr<Communicator> makeInMemoryCommunicator(std::shared_ptr<WorldState> world,
                                                       std::shared_ptr<Group> group, int groupRank);

}  // namespace tl::comm::detail
