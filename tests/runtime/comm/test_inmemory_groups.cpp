// In-memory backend: split, a member that never arrives (timeout, sticky error), a failing rank
// (abort, fail fast) and the harness's own deadline.
#include <gmock/gmock.h>

#include "common/check.h"
#include "runtime/comm/inmemory/inmemory_communicator.h"
#include "tests/runtime/comm/communicator_conformance.h"
#include "tests/support/in_memory_ranks.h"

namespace tl::comm::testing {
namespace {

using ::testing::HasSubstr;
using tl::testing::kPatient;
using tl::testing::runInMemoryRanks;
using Clock = std::chrono::steady_clock;

std::int64_t sumOver(Communicator& comm, std::int64_t value) {
  at::Tensor tensor = at::full({1}, value, at::kLong);
  comm.allreduce(tensor, ReduceOp::Sum, kPatient);
  return tensor.item<std::int64_t>();
}

TEST(InMemorySplit, OddAndEvenRanksOrderedByKey) {
  runInMemoryRanks(5, [](Communicator& comm) {
    const int rank = comm.rank();
    const int parity = rank % 2;
    // key = -rank: the highest old rank of each group becomes its rank 0.
    std::unique_ptr<Communicator> group = comm.split(parity, -rank, kPatient);
    ASSERT_NE(group, nullptr);
    std::vector<int> members;  // old ranks of my group in the new rank order
    for (int r = comm.size() - 1; r >= 0; --r)
      if (r % 2 == parity) members.push_back(r);
    ASSERT_EQ(group->size(), static_cast<int>(members.size()));
    EXPECT_EQ(members.at(group->rank()), rank);
    EXPECT_EQ(group->backend(), "inmemory");

    std::int64_t expectedSum = 0;
    for (int member : members) expectedSum += member;
    EXPECT_EQ(sumOver(*group, rank), expectedSum);
    const at::Tensor gathered = group->allgather(at::scalar_tensor(rank, at::kInt), kPatient);
    EXPECT_TRUE(at::equal(gathered, at::tensor(members, at::kInt)));
    at::Tensor fromGroupRoot = at::full({2}, rank, at::kDouble);
    group->broadcast(fromGroupRoot, 0, kPatient);
    EXPECT_TRUE(at::equal(fromGroupRoot, at::full({2}, members.front(), at::kDouble)));

    // The parent is unaffected by its children.
    EXPECT_EQ(sumOver(comm, 1), comm.size());
  });
}

TEST(InMemorySplit, EqualKeysKeepTheOldOrder) {
  runInMemoryRanks(3, [](Communicator& comm) {
    std::unique_ptr<Communicator> same = comm.split(3, 0, kPatient);
    ASSERT_NE(same, nullptr);
    EXPECT_EQ(same->size(), comm.size());
    EXPECT_EQ(same->rank(), comm.rank());
  });
}

TEST(InMemorySplit, NegativeColorLeavesThatMemberOut) {
  runInMemoryRanks(3, [](Communicator& comm) {
    const bool leaveOut = comm.rank() == 0;
    std::unique_ptr<Communicator> rest = comm.split(leaveOut ? -1 : 7, 0, kPatient);
    if (leaveOut) {
      EXPECT_EQ(rest, nullptr);
    } else {
      ASSERT_NE(rest, nullptr);
      EXPECT_EQ(rest->size(), 2);
      EXPECT_EQ(rest->rank(), comm.rank() - 1);
      EXPECT_EQ(sumOver(*rest, 1), 2);
    }
    comm.barrier(kPatient);
  });
}

// A split of a split: 6 ranks -> halves {0,1,2} {3,4,5} -> in each half, ranks 1 and 2 of it,
// in reverse order. Children work independently of their parents and siblings.
TEST(InMemorySplit, NestedSplitsMakeIndependentGroups) {
  runInMemoryRanks(6, [](Communicator& comm) {
    const int rank = comm.rank();
    std::unique_ptr<Communicator> half = comm.split(rank / 3, rank, kPatient);
    ASSERT_NE(half, nullptr);
    EXPECT_EQ(half->size(), 3);
    EXPECT_EQ(half->rank(), rank % 3);
    std::unique_ptr<Communicator> pair =
        half->split(half->rank() == 0 ? -1 : 0, -half->rank(), kPatient);
    if (half->rank() == 0) {
      EXPECT_EQ(pair, nullptr);
    } else {
      ASSERT_NE(pair, nullptr);
      EXPECT_EQ(pair->size(), 2);
      EXPECT_EQ(pair->rank(), 2 - half->rank());
      // World ranks {1,2} or {4,5}.
      EXPECT_EQ(sumOver(*pair, rank), rank / 3 == 0 ? 3 : 9);
      const at::Tensor gathered = pair->allgather(at::scalar_tensor(rank, at::kLong), kPatient);
      const std::int64_t first = rank / 3 * 3;
      EXPECT_TRUE(at::equal(gathered, at::tensor({first + 2, first + 1}, at::kLong)));
    }
    EXPECT_EQ(sumOver(*half, rank), rank / 3 == 0 ? 3 : 12);
    EXPECT_EQ(sumOver(comm, rank), 15);
  });
}

// Ranks 0 and 1 allreduce on a communicator whose rank 2 never joins that call (it waits on the
// world instead): both get the same TimeoutError after about the timeout, then the same error
// from every call on that communicator, at once. The world is unaffected.
TEST(InMemoryFailures, MemberThatNeverArrivesTimesOutTheOthers) {
  const auto timeout = std::chrono::milliseconds(300);
  std::vector<std::string> messages(3);
  runInMemoryRanks(3, [&](Communicator& world) {
    std::unique_ptr<Communicator> comm = world.split(0, 0, kPatient);
    if (comm->rank() == 2) {
      world.barrier(kPatient);
      return;
    }
    at::Tensor tensor = at::ones({1000}, at::kFloat);
    const auto start = Clock::now();
    try {
      comm->allreduce(tensor, ReduceOp::Sum, {timeout});
      ADD_FAILURE() << "allreduce completed without rank 2";
    } catch (const TimeoutError& e) {
      messages[comm->rank()] = e.what();
    }
    const auto waited = Clock::now() - start;
    // The first of the two to reach the call fails the group at its deadline; the other reached
    // it a little later (0.2 ms once on a loaded machine), so it may have waited that much less.
    EXPECT_GE(waited, timeout - std::chrono::milliseconds(50));
    EXPECT_LT(waited, timeout + std::chrono::seconds(3));

    const auto stickyStart = Clock::now();
    auto expectSameError = [&](const std::function<void()>& call, const char* what) {
      try {
        call();
        ADD_FAILURE() << what << " succeeded on a failed communicator";
      } catch (const TimeoutError& e) {
        EXPECT_EQ(std::string(e.what()), messages[comm->rank()]) << what;
      }
    };
    at::Tensor other = at::ones({4}, at::kFloat);
    expectSameError([&] { comm->barrier(kPatient); }, "barrier");
    expectSameError([&] { comm->allreduce(other, ReduceOp::Max, kPatient); }, "allreduce");
    expectSameError([&] { comm->broadcast(other, 0, kPatient); }, "broadcast");
    expectSameError([&] { comm->allgather(other, kPatient); }, "allgather");
    expectSameError([&] { comm->split(0, 0, kPatient); }, "split");
    EXPECT_LT(Clock::now() - stickyStart, std::chrono::seconds(1));
    world.barrier(kPatient);
  });
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_THAT(messages[0], HasSubstr("inmemory allreduce(sum, 1000 float32"));
  EXPECT_THAT(messages[0], HasSubstr("300 ms"));
  EXPECT_THAT(messages[0], HasSubstr("size 3"));
  EXPECT_THAT(messages[0], HasSubstr("members that had not arrived: 2"));
}

// Rank 1 throws while the others wait for it in an allreduce with a long timeout: the harness
// aborts the world, they fail at once with the abort's error (then with it from every call), and
// runInMemoryRanks reports rank 1's own exception.
TEST(InMemoryFailures, RankThatThrowsAbortsTheWorldAndIsReported) {
  std::vector<std::string> messages(3);
  std::vector<double> waitedSeconds(3, -1);
  try {
    runInMemoryRanks(3, [&](Communicator& comm) {
      if (comm.rank() == 1) throw std::runtime_error("rank one broke");
      at::Tensor tensor = at::ones({4}, at::kFloat);
      const auto start = Clock::now();
      try {
        comm.allreduce(tensor, ReduceOp::Sum, {std::chrono::seconds(30)});
      } catch (const Error& e) {
        messages[comm.rank()] = e.what();
      }
      waitedSeconds[comm.rank()] = std::chrono::duration<double>(Clock::now() - start).count();
      comm.barrier(kPatient);  // sticky: throws the abort again, ending this rank
    });
    FAIL() << "runInMemoryRanks did not report rank 1's failure";
  } catch (const tl::testing::RankFailure& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_THAT(e.what(), HasSubstr("rank 1 of 3 failed: rank one broke"));
    EXPECT_THROW(std::rethrow_exception(e.cause()), std::runtime_error);
  }
  for (int r : {0, 2}) {
    SCOPED_TRACE(r);
    EXPECT_THAT(messages[r], HasSubstr("in-memory world aborted: rank 1 failed: rank one broke"));
    EXPECT_GE(waitedSeconds[r], 0);
    EXPECT_LT(waitedSeconds[r], 5.0);
  }
}

TEST(InMemoryFailures, AbortFromOutsideFailsPendingAndLaterCallsOfEveryCommunicator) {
  auto world = createInMemoryWorld(2, {/*serialized=*/false});
  std::vector<std::string> pending(2), later(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Communicator> comm = world->join(r);
      std::unique_ptr<Communicator> child = comm->split(0, 0, kPatient);
      if (r == 0) {
        try {
          child->barrier(kPatient);  // rank 1 never comes
        } catch (const Error& e) {
          pending[r] = e.what();
        }
      }
      try {
        comm->barrier(kPatient);
      } catch (const Error& e) {
        later[r] = e.what();
      }
      world->leave(r);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  world->abort("stop now");
  world->abort("a second reason is ignored");
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(pending[0], "in-memory world aborted: stop now");
  EXPECT_EQ(later[0], "in-memory world aborted: stop now");
  EXPECT_EQ(later[1], "in-memory world aborted: stop now");
}

TEST(InMemoryWorld, RefusesMisuseOfJoinAndLeave) {
  EXPECT_THROW(createInMemoryWorld(0), Error);
  auto world = createInMemoryWorld(2, {/*serialized=*/false});
  EXPECT_THROW(world->join(2), Error);
  std::unique_ptr<Communicator> comm = world->join(0);
  EXPECT_THROW(world->join(0), Error);
  EXPECT_THROW(world->leave(1), Error);  // rank 1 never joined
  world->leave(0);
  EXPECT_THROW(comm->barrier(kPatient), Error);  // rank 0 has left
}

// A run that hangs in a collective is ended by the harness's deadline instead of the test's.
TEST(InMemoryHarness, DeadlineEndsAHungRun) {
  tl::testing::InMemoryRunOptions options;
  options.deadline = std::chrono::milliseconds(300);
  const auto start = Clock::now();
  try {
    runInMemoryRanks(
        2,
        [](Communicator& comm) {
          if (comm.rank() == 0) comm.barrier({std::chrono::minutes(5)});  // rank 1 never comes
        },
        options);
    FAIL() << "a hung run returned";
  } catch (const TimeoutError& e) {
    EXPECT_THAT(e.what(), HasSubstr("after the deadline of 300 ms: 0"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("left running")));
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace tl::comm::testing
