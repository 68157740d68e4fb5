#include "tests/support/in_memory_ranks.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tl::testing {

namespace {

// After aborting a run that missed its deadline, how long its ranks get to notice.
constexpr auto kGraceAfterAbort = std::chrono::seconds(5);

std::string messageOf(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

// Shared by the caller and the rank threads, which may outlive the call (see the deadline).
struct Run {
  Run(int size, const comm::InMemoryOptions& options,
      std::function<void(comm::Communicator&)> body)
      : world(comm::createInMemoryWorld(size, options)),
        rankBody(std::move(body)),
        finished(size, false) {}

  std::shared_ptr<comm::InMemoryWorld> world;
  const std::function<void(comm::Communicator&)> rankBody;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> finished;
  int finishedCount = 0;
  int firstFailedRank = -1;
  std::exception_ptr firstFailure;
};

void runRank(const std::shared_ptr<Run>& run, int rank) {
  std::exception_ptr failure;
  bool joined = false;
  try {
    std::unique_ptr<comm::Communicator> comm = run->world->join(rank);
    joined = true;
    run->rankBody(*comm);
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    {
      std::lock_guard<std::mutex> lock(run->mutex);
      if (!run->firstFailure) {
        run->firstFailure = failure;
        run->firstFailedRank = rank;
      }
    }
    run->world->abort(str("rank ", rank, " failed: ", messageOf(failure)));
  } else if (::testing::Test::HasFatalFailure()) {
    // An ASSERT_* returned from this rank's body early; gtest reports it, the others must not
    // wait for this rank until their timeouts.
    run->world->abort(str("rank ", rank, " stopped at a failed gtest assertion"));
  }
  try {
    if (joined) run->world->leave(rank);
  } catch (...) {
    // Not expected (the rank's thread holds the baton here), but an exception escaping this
    // thread would end the whole test binary.
    std::lock_guard<std::mutex> lock(run->mutex);
    if (!run->firstFailure) {
      run->firstFailure = std::current_exception();
      run->firstFailedRank = rank;
    }
  }
  std::lock_guard<std::mutex> lock(run->mutex);
  run->finished[rank] = true;
  run->finishedCount += 1;
  run->changed.notify_all();
}

std::string unfinishedRanks(const Run& run) {
  std::string ranks;
  for (std::size_t r = 0; r < run.finished.size(); ++r)
    if (!run.finished[r]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return ranks;
}

}  // namespace

RankFailure::RankFailure(int rank, int size, std::exception_ptr cause)
    : Error(str("rank ", rank, " of ", size, " failed: ", messageOf(cause))),
      rank_(rank),
      cause_(std::move(cause)) {}

void runInMemoryRanks(int size, const std::function<void(comm::Communicator&)>& rankBody,
                      const InMemoryRunOptions& options) {
  auto run = std::make_shared<Run>(size, options.world, rankBody);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back([run, r] { runRank(run, r); });

  std::unique_lock<std::mutex> lock(run->mutex);
  const auto allFinished = [&] { return run->finishedCount == size; };
  if (!run->changed.wait_for(lock, options.deadline, allFinished)) {
    const std::string late = unfinishedRanks(*run);
    lock.unlock();
    run->world->abort(str("the run's deadline of ", options.deadline.count(), " ms passed"));
    lock.lock();
    const bool stopped = run->changed.wait_for(lock, kGraceAfterAbort, allFinished);
    const std::vector<bool> finished = run->finished;
    const std::string stuck = unfinishedRanks(*run);
    lock.unlock();
    for (int r = 0; r < size; ++r) {
      if (finished[r]) {
        threads[r].join();
      } else {
        threads[r].detach();
      }
    }
    throw TimeoutError(str("in-memory ranks still running after the deadline of ",
                           options.deadline.count(), " ms: ", late,
                           stopped ? "" : "; stuck after the abort, left running: " + stuck));
  }
  lock.unlock();
  for (std::thread& thread : threads) thread.join();
  if (run->firstFailure) throw RankFailure(run->firstFailedRank, size, run->firstFailure);
}

}  // namespace tl::testing
