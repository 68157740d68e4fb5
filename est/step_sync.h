// Hand-over between the main fiber and the EST fibers of one process.
//
// A "round" is one pass of every local EST over its micro-batch: a step, or a replay of it when
// the reduction asks. ESTs take turns in local (= logical-rank) order, then the main fiber runs
// again. Each fiber has its own condition variable, so a round wakes each fiber exactly once
// (k + 1 switches). All fibers run on one thread; the mutex only orders the fiber hand-over.
#pragma once

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

namespace tl::est {

class StepSync {
 public:
  explicit StepSync(int k) : k_(k), estTurn_(size_t(k)) {}

  // Main fiber: runs one round and waits until every EST had its turn (or one failed: its
  // error is rethrown here, the ESTs after it skipped).
  void runRound(bool replay) {
    if (k_ == 0) return;  // a member with no EST only takes part in the collectives
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    ++round_;
    replay_ = replay;
    turn_ = 0;
    estTurn_[0].notify_one();
    mainTurn_.wait(lock, [&] { return turn_ == k_; });
    if (error_) std::rethrow_exception(error_);
  }

  // EST fiber `i`: waits for its turn in the next round. False when the fibers are to finish.
  bool awaitTurn(int i, int64_t& myRound, bool& replay) {
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    estTurn_[size_t(i)].wait(lock, [&] { return stop_ || (round_ > myRound && turn_ == i); });
    if (stop_) return false;
    myRound = round_;
    replay = replay_;
    return true;
  }

  // EST fiber: ends its turn; after an error the remaining ESTs are skipped.
  void endTurn(std::exception_ptr error) {
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    if (error) error_ = error;
    if (error_) {
      turn_ = k_;
      mainTurn_.notify_one();
      return;
    }
    ++turn_;
    if (turn_ < k_) estTurn_[size_t(turn_)].notify_one();
    else mainTurn_.notify_one();
  }

  // Main fiber: tells every EST fiber to return (they must be joined afterwards).
  void stopAll() {
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    stop_ = true;
    for (auto& cv : estTurn_) cv.notify_one();
  }

 private:
  const int k_;
  boost::fibers::mutex mutex_;
  std::vector<boost::fibers::condition_variable> estTurn_;
  boost::fibers::condition_variable mainTurn_;
  int64_t round_ = 0;
  bool replay_ = false;
  int turn_ = 0;  // local index of the EST allowed to compute; k: the main fiber's turn
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace tl::est
