// Test support: run P ranks as P threads of this test process, over one in-memory world
// (runtime/comm/inmemory), in baton mode unless told otherwise.
//
//   tl::testing::runInMemoryRanks(3, [&](tl::comm::Communicator& comm) {
//     at::Tensor t = at::ones({4});
//     comm.allreduce(t, tl::comm::ReduceOp::Sum);
//     EXPECT_TRUE(at::equal(t, at::full({4}, 3.0)));
//   });
//
// gtest's EXPECT_* work inside the ranks. A rank that throws, or hits a fatal gtest assertion,
// aborts the world so the other ranks fail fast; the first exception comes back from
// runInMemoryRanks as a RankFailure naming its rank.
#pragma once

#include <chrono>
#include <exception>
#include <functional>

#include "common/check.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/inmemory/inmemory_communicator.h"

namespace tl::testing {

// Collective options for tests whose ranks may wait on each other for a while.
inline const comm::CollectiveOptions kPatient{std::chrono::seconds(20)};

struct InMemoryRunOptions {
  comm::InMemoryOptions world;
  // A run still going then is ended: the world is aborted and runInMemoryRanks throws
  // tl::TimeoutError naming the ranks that were still running. A rank stuck outside any
  // collective cannot be stopped; its thread is then left behind (detached), and the test
  // process should end soon.
  std::chrono::milliseconds deadline = std::chrono::seconds(60);
};

// The first exception thrown by a rank's code.
class RankFailure : public Error {
 public:
  RankFailure(int rank, int size, std::exception_ptr cause);
  int rank() const { return rank_; }
  const std::exception_ptr& cause() const { return cause_; }

 private:
  int rank_;
  std::exception_ptr cause_;
};

// Calls rankBody(communicator of rank r) on one thread per rank r in [0, size), and returns when
// every rank is done. Throws RankFailure for the first rank that threw, or tl::TimeoutError
// when the deadline passed.
void runInMemoryRanks(int size, const std::function<void(comm::Communicator&)>& rankBody,
                      const InMemoryRunOptions& options = {});

}  // namespace tl::testing
