// Conformance: allreduce, broadcast, allgather, reduce-scatter, segment allgather, barrier.
#include <thread>

#include "common/check.h"
#include "tests/runtime/comm/communicator_conformance.h"
#include "tests/runtime/comm/mpi_test_world.h"

namespace tl::comm::testing {
namespace {

TEST_P(CommunicatorConformance, ReportsRankSizeAndBackend) {
  EXPECT_EQ(comm->size(), world().size());
  EXPECT_EQ(comm->rank(), world().rank());
  EXPECT_EQ(comm->backend(), GetParam().name);
}

TEST_P(CommunicatorConformance, AllreduceSumMaxMinIsExactForEveryDtype) {
  const std::int64_t count = 37;
  for (at::ScalarType type : kReducibleTypes) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " " + toString(op));
      at::Tensor tensor = onDevice(contribution(comm->rank(), type, count));
      comm->allreduce(tensor, op, patient());
      const at::Tensor expected = expectedReduction(op, comm->size(), type, count);
      EXPECT_EQ(tensor.scalar_type(), type);
      EXPECT_TRUE(at::equal(tensor.cpu(), expected))
          << "got " << describe(tensor.cpu()) << "\nexpected " << describe(expected);
    }
  }
}

TEST_P(CommunicatorConformance, AllreduceKeepsShapeOfMultiDimensionalTensors) {
  at::Tensor tensor = onDevice(contribution(comm->rank(), at::kFloat, 24).reshape({2, 3, 4}));
  comm->allreduce(tensor, ReduceOp::Sum, patient());
  const at::Tensor expected = expectedReduction(ReduceOp::Sum, comm->size(), at::kFloat, 24);
  EXPECT_EQ(tensor.sizes(), at::IntArrayRef({2, 3, 4}));
  EXPECT_TRUE(at::equal(tensor.cpu().reshape({24}), expected));
}

TEST_P(CommunicatorConformance, AllreduceOfAnEmptyTensorIsANoOp) {
  at::Tensor tensor = onDevice(at::empty({0}, at::kFloat));
  comm->allreduce(tensor, ReduceOp::Sum, patient());
  EXPECT_EQ(tensor.numel(), 0);
  comm->barrier(patient());
}

// Misuse is reported at once, on the caller's rank, and leaves the communicator usable.
TEST_P(CommunicatorConformance, RefusesBadTensorsAndStaysUsable) {
  at::Tensor half = onDevice(at::ones({4}, at::kHalf));
  EXPECT_THROW(comm->allreduce(half, ReduceOp::Sum, patient()), tl::Error);
  at::Tensor flags = onDevice(at::ones({4}, at::kBool));
  EXPECT_THROW(comm->allreduce(flags, ReduceOp::Max, patient()), tl::Error);
  at::Tensor transposed = onDevice(at::ones({3, 5}, at::kFloat)).t();
  EXPECT_THROW(comm->allreduce(transposed, ReduceOp::Sum, patient()), tl::Error);
  EXPECT_THROW(comm->broadcast(transposed, 0, patient()), tl::Error);
  at::Tensor elsewhere = GetParam().wrongDeviceTensor();
  EXPECT_THROW(comm->allreduce(elsewhere, ReduceOp::Sum, patient()), tl::Error);
  EXPECT_THROW(comm->broadcast(elsewhere, 0, patient()), tl::Error);
  EXPECT_THROW(comm->allgather(elsewhere, patient()), tl::Error);
  at::Tensor undefined;
  EXPECT_THROW(comm->allreduce(undefined, ReduceOp::Sum, patient()), tl::Error);
  at::Tensor fine = onDevice(at::ones({4}, at::kFloat));
  EXPECT_THROW(comm->broadcast(fine, comm->size(), patient()), tl::Error);
  EXPECT_THROW(comm->broadcast(fine, -1, patient()), tl::Error);
  try {
    comm->allreduce(half, ReduceOp::Sum, patient());
  } catch (const tl::TimeoutError&) {
    ADD_FAILURE() << "misuse must not be reported as a timeout";
  } catch (const tl::Error& e) {
    EXPECT_NE(std::string(e.what()).find("float16"), std::string::npos) << e.what();
  }

  comm->allreduce(fine, ReduceOp::Sum, patient());
  EXPECT_TRUE(at::equal(fine.cpu(), at::full({4}, comm->size(), at::kFloat)));
}

TEST_P(CommunicatorConformance, BroadcastFromEveryRootCopiesEveryDtype) {
  for (at::ScalarType type : {at::kFloat, at::kDouble, at::kLong, at::kByte, at::kHalf, at::kBool}) {
    for (int root = 0; root < comm->size(); ++root) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " from root " + std::to_string(root));
      at::Tensor tensor = onDevice(contribution(comm->rank(), type, 15).reshape({3, 5}));
      comm->broadcast(tensor, root, patient());
      const at::Tensor expected = contribution(root, type, 15).reshape({3, 5});
      EXPECT_TRUE(at::equal(tensor.cpu(), expected))
          << "got " << describe(tensor.cpu()) << "\nexpected " << describe(expected);
    }
  }
}

TEST_P(CommunicatorConformance, AllgatherStacksEveryMembersTensorInRankOrder) {
  for (at::ScalarType type : {at::kInt, at::kDouble, at::kHalf}) {
    SCOPED_TRACE(c10::toString(type));
    const at::Tensor mine = onDevice(contribution(comm->rank(), type, 6).reshape({2, 3}));
    const at::Tensor gathered = comm->allgather(mine, patient());
    ASSERT_EQ(gathered.sizes(), at::IntArrayRef({comm->size(), 2, 3}));
    EXPECT_EQ(gathered.scalar_type(), type);
    for (int r = 0; r < comm->size(); ++r)
      EXPECT_TRUE(at::equal(gathered[r].cpu(), contribution(r, type, 6).reshape({2, 3})))
          << "slice " << r << ": " << describe(gathered[r].cpu());
  }
}

TEST_P(CommunicatorConformance, AllgatherOfScalarsAndNonContiguousTensors) {
  const at::Tensor scalar = onDevice(at::scalar_tensor(comm->rank() * 10, at::kLong));
  const at::Tensor scalars = comm->allgather(scalar, patient());
  EXPECT_TRUE(at::equal(scalars.cpu(), at::arange(comm->size(), at::kLong) * 10));

  const at::Tensor base = contribution(comm->rank(), at::kFloat, 12).reshape({3, 4});
  const at::Tensor gathered = comm->allgather(onDevice(base).t(), patient());
  ASSERT_EQ(gathered.sizes(), at::IntArrayRef({comm->size(), 4, 3}));
  for (int r = 0; r < comm->size(); ++r)
    EXPECT_TRUE(at::equal(gathered[r].cpu(), contribution(r, at::kFloat, 12).reshape({3, 4}).t()));
}

// Every member's segment holds the exact sum; for floats too, whose values here sum exactly in
// any order.
TEST_P(CommunicatorConformance, ReduceScatterSumsEachMembersSegmentExactly) {
  const int size = comm->size();
  for (std::int64_t count : kSegmentedCounts) {
    const Segment mine = segmentOf(count, size, comm->rank());
    for (at::ScalarType type : kReducibleTypes) {
      SCOPED_TRACE(str(c10::toString(type), " x ", count));
      at::Tensor tensor = onDevice(contribution(comm->rank(), type, count));
      comm->reduceScatter(tensor, patient());
      const at::Tensor expected = expectedReduction(ReduceOp::Sum, size, type, count);
      EXPECT_TRUE(at::equal(tensor.cpu().narrow(0, mine.offset, mine.length),
                            expected.narrow(0, mine.offset, mine.length)));
    }
    at::Tensor large = onDevice(largeIntegers(comm->rank(), count));
    comm->reduceScatter(large, patient());
    at::Tensor sum = largeIntegers(0, count);
    for (int r = 1; r < size; ++r) sum += largeIntegers(r, count);
    EXPECT_TRUE(at::equal(large.cpu().narrow(0, mine.offset, mine.length),
                          sum.narrow(0, mine.offset, mine.length)))
        << "int64 sums of " << count << " elements";
  }
}

TEST_P(CommunicatorConformance, AllgatherSegmentsGivesEveryMemberTheWhole) {
  for (std::int64_t count : kSegmentedCounts) {
    for (at::ScalarType type : kReducibleTypes) {
      SCOPED_TRACE(str(c10::toString(type), " x ", count));
      const at::Tensor whole = contribution(5, type, count);
      at::Tensor tensor = onDevice(onlySegment(whole, comm->size(), comm->rank()));
      comm->allgatherSegments(tensor, patient());
      EXPECT_TRUE(at::equal(tensor.cpu(), whole));
    }
  }
  // A multi-dimensional tensor is taken as flat.
  const at::Tensor grid = at::arange(35, at::kFloat).reshape({5, 7});
  at::Tensor tensor = onDevice(onlySegment(grid.reshape({35}), comm->size(), comm->rank()).reshape({5, 7}));
  comm->allgatherSegments(tensor, patient());
  EXPECT_TRUE(at::equal(tensor.cpu(), grid));
}

// As the exact reducer does: reduce-scatters started together, then segment allgathers, waited
// for in another order.
TEST_P(CommunicatorConformance, StartedSegmentedCollectivesFinishLikeBlockingOnes) {
  const int size = comm->size();
  std::vector<at::Tensor> sums;
  std::vector<std::unique_ptr<PendingCollective>> pending;
  for (std::int64_t count : {std::int64_t(70'001), std::int64_t(3), std::int64_t(5'000)}) {
    sums.push_back(onDevice(largeIntegers(comm->rank(), count)));
    pending.push_back(comm->startReduceScatter(sums.back(), patient()));
  }
  std::vector<at::Tensor> means;
  for (size_t i = sums.size(); i-- > 0;) {
    pending[i]->wait();
    const at::Tensor whole = at::arange(sums[i].numel(), at::kFloat) / 3;
    means.push_back(onDevice(onlySegment(whole, size, comm->rank())));
    pending.push_back(comm->startAllgatherSegments(means.back(), patient()));
  }
  for (auto& p : pending) p->wait();
  for (size_t i = 0; i < sums.size(); ++i) {
    const std::int64_t count = sums[i].numel();
    at::Tensor sum = largeIntegers(0, count);
    for (int r = 1; r < size; ++r) sum += largeIntegers(r, count);
    const Segment mine = segmentOf(count, size, comm->rank());
    EXPECT_TRUE(at::equal(sums[i].cpu().narrow(0, mine.offset, mine.length),
                          sum.narrow(0, mine.offset, mine.length))) << "sums " << i;
  }
  for (const at::Tensor& m : means)
    EXPECT_TRUE(at::equal(m.cpu(), at::arange(m.numel(), at::kFloat) / 3));
}

TEST_P(CommunicatorConformance, SegmentedCollectivesRefuseBadTensorsAndStayUsable) {
  at::Tensor half = onDevice(at::ones({4}, at::kHalf));
  EXPECT_THROW(comm->reduceScatter(half, patient()), tl::Error);
  EXPECT_THROW(comm->allgatherSegments(half, patient()), tl::Error);
  at::Tensor transposed = onDevice(at::ones({3, 5}, at::kLong)).t();
  EXPECT_THROW(comm->reduceScatter(transposed, patient()), tl::Error);
  EXPECT_THROW(comm->allgatherSegments(transposed, patient()), tl::Error);
  at::Tensor elsewhere = GetParam().wrongDeviceTensor();
  EXPECT_THROW(comm->reduceScatter(elsewhere, patient()), tl::Error);
  at::Tensor undefined;
  EXPECT_THROW(comm->startReduceScatter(undefined, patient()), tl::Error);
  at::Tensor fine = onDevice(at::ones({4}, at::kLong));
  comm->reduceScatter(fine, patient());
  const Segment mine = segmentOf(4, comm->size(), comm->rank());
  EXPECT_TRUE(at::equal(fine.cpu().narrow(0, mine.offset, mine.length),
                        at::full({mine.length}, comm->size(), at::kLong)));
}

TEST_P(CommunicatorConformance, BarrierWaitsForTheSlowestMember) {
  const auto lag = std::chrono::milliseconds(300);
  comm->barrier(patient());
  const auto start = std::chrono::steady_clock::now();
  if (comm->rank() == 0) std::this_thread::sleep_for(lag);
  comm->barrier(patient());
  const auto waited = std::chrono::steady_clock::now() - start;
  // Everyone left the first barrier at about the same moment, so everyone waited for rank 0.
  EXPECT_GE(waited, lag - std::chrono::milliseconds(100));
}

}  // namespace
}  // namespace tl::comm::testing
