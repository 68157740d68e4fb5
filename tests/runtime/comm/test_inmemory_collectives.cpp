// In-memory backend: allreduce, broadcast, allgather, barrier, as the conformance suite checks
// them for MPI (that suite runs one rank per process; here every rank is a thread of this test).
#include <atomic>
#include <mutex>
#include <thread>

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

TEST(InMemoryCommunicator, ReportsRankSizeAndBackend) {
  std::mutex mutex;
  std::vector<int> seen;
  runInMemoryRanks(3, [&](Communicator& comm) {
    EXPECT_EQ(comm.size(), 3);
    EXPECT_EQ(comm.backend(), "inmemory");
    std::lock_guard<std::mutex> lock(mutex);
    seen.push_back(comm.rank());
  });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
}

TEST(InMemoryCommunicator, AllreduceSumMaxMinIsExactForEveryDtype) {
  for (int size : {1, 2, 4}) {
    runInMemoryRanks(size, [&](Communicator& comm) {
      for (at::ScalarType type : kReducibleTypes) {
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
          SCOPED_TRACE(str(c10::toString(type), " ", toString(op), " on ", size, " ranks"));
          at::Tensor tensor = contribution(comm.rank(), type, 37);
          comm.allreduce(tensor, op, kPatient);
          const at::Tensor expected = expectedReduction(op, size, type, 37);
          EXPECT_EQ(tensor.scalar_type(), type);
          EXPECT_TRUE(at::equal(tensor, expected))
              << "got " << describe(tensor) << "\nexpected " << describe(expected);
        }
      }
    });
  }
}

// Float addition is not associative: in float32, (1e8 - 1e8) + 1 is 1 but (1 - 1e8) + 1e8 and
// (1e8 + 1) - 1e8 are 0. Rank order gives 1 however the threads arrive, also concurrently.
TEST(InMemoryCommunicator, SumsInRankOrderWhateverTheArrivalOrder) {
  const float values[] = {1e8f, -1e8f, 1.0f};
  for (bool serialized : {true, false}) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      tl::testing::InMemoryRunOptions options;
      options.world.serialized = serialized;
      runInMemoryRanks(
          3,
          [&](Communicator& comm) {
            // Vary who arrives last.
            if (comm.rank() == attempt % 3 && !serialized)
              std::this_thread::sleep_for(std::chrono::milliseconds(2));
            at::Tensor tensor = at::full({2}, values[comm.rank()], at::kFloat);
            comm.allreduce(tensor, ReduceOp::Sum, kPatient);
            EXPECT_TRUE(at::equal(tensor, at::ones({2}, at::kFloat))) << describe(tensor);
          },
          options);
    }
  }
}

TEST(InMemoryCommunicator, AllreduceKeepsShapesAndEmptyTensorsWork) {
  runInMemoryRanks(2, [](Communicator& comm) {
    at::Tensor tensor = contribution(comm.rank(), at::kFloat, 24).reshape({2, 3, 4});
    comm.allreduce(tensor, ReduceOp::Sum, kPatient);
    EXPECT_EQ(tensor.sizes(), at::IntArrayRef({2, 3, 4}));
    EXPECT_TRUE(at::equal(tensor.reshape({24}), expectedReduction(ReduceOp::Sum, 2, at::kFloat, 24)));

    at::Tensor empty = at::empty({0}, at::kFloat);
    comm.allreduce(empty, ReduceOp::Sum, kPatient);
    EXPECT_EQ(empty.numel(), 0);

    at::Tensor scalar = at::scalar_tensor(comm.rank() + 1, at::kLong);
    comm.allreduce(scalar, ReduceOp::Max, kPatient);
    EXPECT_EQ(scalar.item<std::int64_t>(), 2);
  });
}

// Misuse is reported at once, on the caller's rank, and leaves the communicator usable.
TEST(InMemoryCommunicator, RefusesBadTensorsAndStaysUsable) {
  runInMemoryRanks(2, [](Communicator& comm) {
    at::Tensor half = at::ones({4}, at::kHalf);
    try {
      comm.allreduce(half, ReduceOp::Sum, kPatient);
      ADD_FAILURE() << "allreduce of float16 succeeded";
    } catch (const TimeoutError&) {
      ADD_FAILURE() << "misuse must not be reported as a timeout";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("float16"));
    }
    at::Tensor flags = at::ones({4}, at::kBool);
    EXPECT_THROW(comm.allreduce(flags, ReduceOp::Max, kPatient), Error);
    at::Tensor transposed = at::ones({3, 5}, at::kFloat).t();
    EXPECT_THROW(comm.allreduce(transposed, ReduceOp::Sum, kPatient), Error);
    EXPECT_THROW(comm.broadcast(transposed, 0, kPatient), Error);
    at::Tensor meta = at::empty({4}, at::TensorOptions().device(at::kMeta));
    EXPECT_THROW(comm.allreduce(meta, ReduceOp::Sum, kPatient), Error);
    EXPECT_THROW(comm.broadcast(meta, 0, kPatient), Error);
    EXPECT_THROW(comm.allgather(meta, kPatient), Error);
    at::Tensor undefined;
    EXPECT_THROW(comm.allreduce(undefined, ReduceOp::Sum, kPatient), Error);
    at::Tensor fine = at::ones({4}, at::kFloat);
    EXPECT_THROW(comm.broadcast(fine, comm.size(), kPatient), Error);
    EXPECT_THROW(comm.broadcast(fine, -1, kPatient), Error);
    EXPECT_THROW(comm.barrier({std::chrono::milliseconds(-1)}), Error);

    comm.allreduce(fine, ReduceOp::Sum, kPatient);
    EXPECT_TRUE(at::equal(fine, at::full({4}, comm.size(), at::kFloat)));
  });
}

TEST(InMemoryCommunicator, BroadcastFromEveryRootCopiesEveryDtype) {
  runInMemoryRanks(3, [](Communicator& comm) {
    for (at::ScalarType type : {at::kFloat, at::kDouble, at::kLong, at::kByte, at::kHalf, at::kBool}) {
      for (int root = 0; root < comm.size(); ++root) {
        SCOPED_TRACE(str(c10::toString(type), " from root ", root));
        at::Tensor tensor = contribution(comm.rank(), type, 15).reshape({3, 5});
        comm.broadcast(tensor, root, kPatient);
        const at::Tensor expected = contribution(root, type, 15).reshape({3, 5});
        EXPECT_TRUE(at::equal(tensor, expected))
            << "got " << describe(tensor) << "\nexpected " << describe(expected);
      }
    }
  });
}

TEST(InMemoryCommunicator, AllgatherStacksEveryMembersTensorInRankOrder) {
  runInMemoryRanks(3, [](Communicator& comm) {
    for (at::ScalarType type : {at::kInt, at::kDouble, at::kHalf}) {
      SCOPED_TRACE(c10::toString(type));
      const at::Tensor gathered =
          comm.allgather(contribution(comm.rank(), type, 6).reshape({2, 3}), kPatient);
      ASSERT_EQ(gathered.sizes(), at::IntArrayRef({3, 2, 3}));
      EXPECT_EQ(gathered.scalar_type(), type);
      for (int r = 0; r < 3; ++r)
        EXPECT_TRUE(at::equal(gathered[r], contribution(r, type, 6).reshape({2, 3})))
            << "slice " << r << ": " << describe(gathered[r]);
    }
    const at::Tensor scalars =
        comm.allgather(at::scalar_tensor(comm.rank() * 10, at::kLong), kPatient);
    EXPECT_TRUE(at::equal(scalars, at::arange(3, at::kLong) * 10));

    const at::Tensor base = contribution(comm.rank(), at::kFloat, 12).reshape({3, 4});
    const at::Tensor transposed = comm.allgather(base.t(), kPatient);
    ASSERT_EQ(transposed.sizes(), at::IntArrayRef({3, 4, 3}));
    for (int r = 0; r < 3; ++r)
      EXPECT_TRUE(at::equal(transposed[r], contribution(r, at::kFloat, 12).reshape({3, 4}).t()));
  });
}

// Ranks share an address space here, unlike processes: a rank writing into what it gathered must
// not change what the others gathered.
TEST(InMemoryCommunicator, AllgatherResultsAreEachRanksOwn) {
  runInMemoryRanks(2, [](Communicator& comm) {
    at::Tensor gathered = comm.allgather(at::full({2}, comm.rank(), at::kInt), kPatient);
    comm.barrier(kPatient);
    gathered.fill_(100 + comm.rank());
    comm.barrier(kPatient);
    EXPECT_TRUE(at::equal(gathered, at::full({2, 2}, 100 + comm.rank(), at::kInt)));
  });
}

// Nobody leaves the barrier before the last member (which dawdles first) has arrived: in baton
// mode a barrier that did not wait would return before rank 2 ran at all.
TEST(InMemoryCommunicator, BarrierWaitsForTheSlowestMember) {
  for (bool serialized : {true, false}) {
    tl::testing::InMemoryRunOptions options;
    options.world.serialized = serialized;
    std::atomic<bool> slowestArrived{false};
    runInMemoryRanks(
        3,
        [&](Communicator& comm) {
          if (comm.rank() == 2) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            slowestArrived = true;
          }
          comm.barrier(kPatient);
          EXPECT_TRUE(slowestArrived) << "rank " << comm.rank() << " left the barrier early";
        },
        options);
  }
}

TEST(SegmentOf, SplitsAsEvenlyAsCanBeWithTheFirstSegmentsLonger) {
  struct Case {
    std::int64_t numel;
    int size;
    std::vector<std::int64_t> lengths;
  };
  const std::vector<Case> cases = {
      {0, 3, {0, 0, 0}}, {1, 3, {1, 0, 0}}, {2, 3, {1, 1, 0}}, {7, 3, {3, 2, 2}},
      {9, 3, {3, 3, 3}}, {5, 1, {5}},       {10, 4, {3, 3, 2, 2}}};
  for (const auto& [numel, size, lengths] : cases) {
    std::int64_t offset = 0;
    for (int r = 0; r < size; ++r) {
      const Segment s = segmentOf(numel, size, r);
      EXPECT_EQ(s.offset, offset) << numel << " over " << size << ", rank " << r;
      EXPECT_EQ(s.length, lengths[r]) << numel << " over " << size << ", rank " << r;
      offset += s.length;
    }
    EXPECT_EQ(offset, numel);
  }
  EXPECT_THROW(segmentOf(5, 2, 2), Error);
  EXPECT_THROW(segmentOf(-1, 2, 0), Error);
  EXPECT_THROW(segmentOf(5, 0, 0), Error);
}

TEST(InMemoryCommunicator, ReduceScatterSumsEachMembersSegmentExactly) {
  for (int size : {1, 2, 3, 4}) {
    runInMemoryRanks(size, [&](Communicator& comm) {
      for (std::int64_t count : {0, 1, 2, 5, 37}) {
        for (at::ScalarType type : kReducibleTypes) {
          SCOPED_TRACE(str(c10::toString(type), " x ", count, " on ", size, " ranks"));
          at::Tensor tensor = contribution(comm.rank(), type, count);
          comm.reduceScatter(tensor, kPatient);
          const Segment mine = segmentOf(count, size, comm.rank());
          const at::Tensor expected = expectedReduction(ReduceOp::Sum, size, type, count);
          EXPECT_TRUE(at::equal(tensor.narrow(0, mine.offset, mine.length),
                                expected.narrow(0, mine.offset, mine.length)))
              << "got " << describe(tensor) << "\nexpected " << describe(expected);
        }
        at::Tensor large = largeIntegers(comm.rank(), count);
        comm.reduceScatter(large, kPatient);
        at::Tensor sum = largeIntegers(0, count);
        for (int r = 1; r < size; ++r) sum += largeIntegers(r, count);
        const Segment mine = segmentOf(count, size, comm.rank());
        EXPECT_TRUE(at::equal(large.narrow(0, mine.offset, mine.length),
                              sum.narrow(0, mine.offset, mine.length)));
      }
    });
  }
}

TEST(InMemoryCommunicator, AllgatherSegmentsGivesEveryMemberTheWhole) {
  for (int size : {1, 2, 3, 4}) {
    runInMemoryRanks(size, [&](Communicator& comm) {
      for (std::int64_t count : {0, 1, 2, 5, 37}) {
        for (at::ScalarType type : kReducibleTypes) {
          SCOPED_TRACE(str(c10::toString(type), " x ", count, " on ", size, " ranks"));
          const at::Tensor whole = contribution(5, type, count).reshape({count});
          at::Tensor tensor = onlySegment(whole, size, comm.rank());
          comm.allgatherSegments(tensor, kPatient);
          EXPECT_TRUE(at::equal(tensor, whole)) << "got " << describe(tensor);
        }
      }
      // Started and waited later, as the exact reducer does.
      at::Tensor a = onlySegment(at::arange(11, at::kFloat), size, comm.rank());
      auto started = comm.startAllgatherSegments(a, kPatient);
      started->wait();
      EXPECT_TRUE(started->test());
      EXPECT_TRUE(at::equal(a, at::arange(11, at::kFloat)));
    });
  }
}

// Ranks out of step would deadlock or corrupt data with MPI; here both learn what happened.
TEST(InMemoryCommunicator, MembersCallingDifferentCollectivesFailTheCommunicator) {
  std::vector<std::string> messages(2);
  runInMemoryRanks(2, [&](Communicator& comm) {
    at::Tensor tensor = at::ones({4}, at::kFloat);
    try {
      if (comm.rank() == 0) {
        comm.allreduce(tensor, ReduceOp::Sum, kPatient);
      } else {
        comm.broadcast(tensor, 0, kPatient);
      }
      ADD_FAILURE() << "mismatched collectives completed";
    } catch (const Error& e) {
      messages[comm.rank()] = e.what();
    }
    EXPECT_THROW(comm.barrier(kPatient), Error);  // sticky
  });
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_THAT(messages[0], HasSubstr("allreduce(sum, 4 float32"));
  EXPECT_THAT(messages[0], HasSubstr("broadcast(root 0, 4 float32"));
}

TEST(InMemoryCommunicator, AReduceScatterMetByAnAllreduceFailsTheCommunicator) {
  std::vector<std::string> messages(2);
  runInMemoryRanks(2, [&](Communicator& comm) {
    at::Tensor tensor = at::ones({4}, at::kLong);
    try {
      if (comm.rank() == 0) {
        comm.reduceScatter(tensor, kPatient);
      } else {
        comm.allreduce(tensor, ReduceOp::Sum, kPatient);
      }
      ADD_FAILURE() << "mismatched collectives completed";
    } catch (const Error& e) {
      messages[comm.rank()] = e.what();
    }
    EXPECT_THROW(comm.allgatherSegments(tensor, kPatient), Error);  // sticky
  });
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_THAT(messages[0], HasSubstr("reduceScatter(4 int64"));
}

TEST(InMemoryCommunicator, SegmentedCollectivesRefuseBadTensorsAndTimeOut) {
  runInMemoryRanks(2, [](Communicator& comm) {
    at::Tensor half = at::ones({4}, at::kHalf);
    EXPECT_THROW(comm.reduceScatter(half, kPatient), Error);
    EXPECT_THROW(comm.allgatherSegments(half, kPatient), Error);
    at::Tensor transposed = at::ones({3, 5}, at::kLong).t();
    EXPECT_THROW(comm.reduceScatter(transposed, kPatient), Error);
    EXPECT_THROW(comm.allgatherSegments(transposed, kPatient), Error);
    at::Tensor fine = at::ones({4}, at::kLong);
    comm.reduceScatter(fine, kPatient);  // still usable
    // Rank 1 never joins this one: rank 0 times out, and the communicator stays failed.
    if (comm.rank() == 0) {
      EXPECT_THROW(comm.reduceScatter(fine, {std::chrono::milliseconds(200)}), TimeoutError);
      EXPECT_THROW(comm.allgatherSegments(fine, kPatient), Error);
    }
  });
}

}  // namespace
}  // namespace tl::comm::testing
