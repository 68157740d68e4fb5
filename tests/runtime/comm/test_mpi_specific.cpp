// What only the MPI backend promises: the session, the owning thread, chunked large counts,
// the ring allreduce for order-free sums.
#include <cstring>
#include <limits>
#include <thread>

#include <gmock/gmock.h>
#include <ATen/ATen.h>

#include "common/check.h"
#include "runtime/comm/collective_timeout.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/mpi/mpi_ring_allreduce.h"
#include "tests/runtime/comm/communicator_conformance.h"
#include "tests/runtime/comm/mpi_test_world.h"

namespace tl::comm::testing {
namespace {

using ::testing::HasSubstr;

const CollectiveOptions kPatient{std::chrono::seconds(60)};

TEST(MpiSession, KnowsTheWorld) {
  EXPECT_EQ(session().worldRank(), world().rank());
  EXPECT_EQ(session().worldSize(), world().size());
  EXPECT_GE(session().worldSize(), 2) << "run this binary under mpirun -np 2 or more";
}

// tl's communicators belong to the session's thread (only the lead's process starter uses MPI
// elsewhere); tl refuses collectives from other threads instead of letting them interleave.
TEST(MpiCommunicator, RefusesCollectivesFromAnotherThreadAndStaysUsable) {
  std::unique_ptr<Communicator> comm = createMpiWorldCommunicator();
  std::string message;
  std::thread other([&] {
    try {
      comm->barrier(kPatient);
    } catch (const tl::Error& e) {
      message = e.what();
    }
  });
  other.join();
  EXPECT_THAT(message, HasSubstr("thread"));
  EXPECT_THAT(message, HasSubstr("barrier"));

  at::Tensor ones = at::ones({2}, at::kInt);
  comm->allreduce(ones, ReduceOp::Sum, kPatient);
  EXPECT_TRUE(at::equal(ones, at::full({2}, comm->size(), at::kInt)));
}

TEST(MpiCommunicator, RejectsAChunkLimitBelowOne) {
  MpiCommunicatorOptions options;
  options.maxCountPerCall = 0;
  EXPECT_THROW(createMpiWorldCommunicator(options), tl::Error);
}

// Counts above MPI's int limit go in several calls; a small limit takes the same path.
TEST(MpiCommunicator, SplitsLargeCountsIntoSeveralCalls) {
  MpiCommunicatorOptions options;
  options.maxCountPerCall = 1000;
  std::unique_ptr<Communicator> comm = createMpiWorldCommunicator(options);
  const int rank = comm->rank();
  const int size = comm->size();
  const at::Tensor pattern = at::arange(10'007, at::kLong);

  at::Tensor sum = pattern * (rank + 1);
  comm->allreduce(sum, ReduceOp::Sum, kPatient);
  EXPECT_TRUE(at::equal(sum, pattern * (size * (size + 1) / 2)));

  at::Tensor fromLast = (pattern * rank).to(at::kFloat);  // 40'028 bytes: 41 byte chunks
  comm->broadcast(fromLast, size - 1, kPatient);
  EXPECT_TRUE(at::equal(fromLast, (pattern * (size - 1)).to(at::kFloat)));

  const at::Tensor mine = (pattern.reshape({1, 10'007}) + 100 * rank).to(at::kDouble);
  const at::Tensor gathered = comm->allgather(mine, kPatient);  // strided chunks
  ASSERT_EQ(gathered.sizes(), at::IntArrayRef({size, 1, 10'007}));
  for (int r = 0; r < size; ++r)
    EXPECT_TRUE(at::equal(gathered[r], (pattern.reshape({1, 10'007}) + 100 * r).to(at::kDouble)))
        << "member " << r;

  // Children keep the limit.
  std::unique_ptr<Communicator> child = comm->split(0, rank, kPatient);
  at::Tensor childSum = pattern.clone();
  child->allreduce(childSum, ReduceOp::Max, kPatient);
  EXPECT_TRUE(at::equal(childSum, pattern));
}

TEST(MpiCommunicator, TimeoutMustNotBeNegative) {
  std::unique_ptr<Communicator> comm = createMpiWorldCommunicator();
  EXPECT_THROW(comm->barrier(CollectiveOptions{std::chrono::milliseconds(-1)}), tl::Error);
  comm->barrier(kPatient);  // not sticky: nothing had started
}

MpiCommunicatorOptions ringFromZeroBytes(std::int64_t chunkBytes) {
  MpiCommunicatorOptions options;
  options.ringMinBytes = 0;
  options.ringChunkBytes = chunkBytes;
  return options;
}

// Which sums may go around the ring: those whose bits do not depend on the order.
TEST(MpiRingAllreduce, TakesOnlySumsWhoseOrderCannotShowInTheBits) {
  for (int size : {2, 3, 8}) {
    EXPECT_TRUE(detail::ringReducesExactly(ReduceOp::Sum, at::kLong, size));
    EXPECT_TRUE(detail::ringReducesExactly(ReduceOp::Sum, at::kByte, size));
    EXPECT_EQ(detail::ringReducesExactly(ReduceOp::Sum, at::kFloat, size), size == 2);
    EXPECT_EQ(detail::ringReducesExactly(ReduceOp::Sum, at::kDouble, size), size == 2);
    EXPECT_FALSE(detail::ringReducesExactly(ReduceOp::Max, at::kLong, size));
    EXPECT_TRUE(detail::ringMayReduce(ReduceOp::Sum, at::kFloat, size, /*anyFixedOrder=*/true));
    EXPECT_EQ(detail::ringMayReduce(ReduceOp::Sum, at::kFloat, size, false), size == 2);
    EXPECT_FALSE(detail::ringMayReduce(ReduceOp::Max, at::kFloat, size, true));
  }
}

// Tiny chunks and ragged lengths cross every segment and chunk boundary, including lengths
// that leave some members' segments empty.
TEST(MpiRingAllreduce, SumsExactlyAtEverySegmentAndChunkBoundary) {
  const int size = world().size();
  for (std::int64_t chunkBytes : {std::int64_t(8), std::int64_t(1000), std::int64_t(1) << 20}) {
    std::unique_ptr<Communicator> comm = createMpiWorldCommunicator(ringFromZeroBytes(chunkBytes));
    for (std::int64_t count : {std::int64_t(1), std::int64_t(size - 1), std::int64_t(size + 1),
                               std::int64_t(1001), std::int64_t(10'007)}) {
      for (at::ScalarType type : {at::kLong, at::kInt, at::kByte}) {
        if (chunkBytes < 100 && count > 1001) continue;  // thousands of messages: slow, no news
        at::Tensor tensor = contribution(comm->rank(), type, count);
        comm->allreduce(tensor, ReduceOp::Sum, kPatient);
        EXPECT_TRUE(at::equal(tensor, expectedReduction(ReduceOp::Sum, size, type, count)))
            << count << " " << c10::toString(type) << " in chunks of " << chunkBytes << " bytes";
      }
    }
  }
}

// Overlapped buckets keep many rings in flight on one communicator: each has its own tags,
// and more rings than tag ranges wait for the oldest to finish. Members poll the rings in
// different orders (reversed on odd ranks) and wait for them in yet another.
TEST(MpiRingAllreduce, ManyRingsInFlightKeepTheirMessagesApart) {
  const int size = world().size();
  std::unique_ptr<Communicator> comm = createMpiWorldCommunicator(ringFromZeroBytes(1000));
  constexpr int kRings = 150;  // more than the communicator's ranges of tags
  std::vector<at::Tensor> tensors;
  std::vector<std::unique_ptr<PendingCollective>> pending;
  for (int i = 0; i < kRings; ++i) {
    tensors.push_back(contribution(comm->rank(), at::kLong, 3001 + i) * (i + 1));
    pending.push_back(comm->startAllreduce(tensors.back(), ReduceOp::Sum, kPatient));
    for (int j = 0; j <= i; ++j) pending[comm->rank() % 2 ? i - j : j]->test();
  }
  for (int i = kRings - 1; i >= 0; --i) pending[i]->wait();
  for (int i = 0; i < kRings; ++i) {
    EXPECT_TRUE(at::equal(tensors[i], expectedReduction(ReduceOp::Sum, size, at::kLong, 3001 + i) * (i + 1)))
        << "ring " << i;
  }
}

// Finished rings hand their scratch space to the next ones: a smaller ring after a larger
// one, another dtype, a larger one that needs a new space, and rings in flight together must
// each still receive into space of their own.
TEST(MpiRingAllreduce, ScratchSpaceGoesFromFinishedRingsToLaterOnes) {
  const int size = world().size();
  std::unique_ptr<Communicator> comm = createMpiWorldCommunicator(ringFromZeroBytes(4096));
  const std::vector<std::pair<at::ScalarType, std::int64_t>> rings = {
      {at::kLong, 50'001}, {at::kLong, 7}, {at::kByte, 30'011}, {at::kInt, 50'003},
      {at::kFloat, 20'000}, {at::kLong, 120'007}, {at::kInt, 3}, {at::kLong, 120'007}};
  for (int round = 0; round < 2; ++round) {
    std::vector<at::Tensor> tensors;
    std::vector<std::unique_ptr<PendingCollective>> pending;
    for (const auto& [type, count] : rings) {
      tensors.push_back(contribution(comm->rank(), type, count));
      if (round == 0) {
        comm->allreduce(tensors.back(), ReduceOp::Sum, kPatient);  // one at a time
      } else {
        pending.push_back(comm->startAllreduce(tensors.back(), ReduceOp::Sum, kPatient));
      }
    }
    for (auto& p : pending) p->wait();
    for (size_t i = 0; i < rings.size(); ++i) {
      const auto& [type, count] = rings[i];
      EXPECT_TRUE(at::equal(tensors[i], expectedReduction(ReduceOp::Sum, size, type, count)))
          << "round " << round << " ring " << i;
    }
  }
}

// With two members the ring's float sum is the same single addition MPI_Iallreduce does, so
// the bits agree with it on values where rounding matters; with more members float sums keep
// MPI_Iallreduce (unless the caller accepts any fixed order), so the bits agree trivially.
TEST(MpiRingAllreduce, FloatSumsGiveTheBitsMpiIallreduceGives) {
  MpiCommunicatorOptions iallreduce;
  iallreduce.ringMinBytes = std::numeric_limits<std::int64_t>::max();
  std::unique_ptr<Communicator> ring = createMpiWorldCommunicator(ringFromZeroBytes(4096));
  std::unique_ptr<Communicator> reference = createMpiWorldCommunicator(iallreduce);
  at::manual_seed(7 + ring->rank());
  for (at::ScalarType type : {at::kFloat, at::kDouble}) {
    const at::Tensor values = (at::randn({100'003}) * at::exp(at::randn({100'003}) * 8)).to(type);
    at::Tensor viaRing = values.clone();
    at::Tensor viaIallreduce = values.clone();
    ring->allreduce(viaRing, ReduceOp::Sum, kPatient);
    reference->allreduce(viaIallreduce, ReduceOp::Sum, kPatient);
    ASSERT_EQ(viaRing.nbytes(), viaIallreduce.nbytes());
    EXPECT_EQ(std::memcmp(viaRing.data_ptr(), viaIallreduce.data_ptr(), viaRing.nbytes()), 0)
        << c10::toString(type);
    EXPECT_FALSE(at::equal(viaRing, values)) << "nothing was reduced";
  }
}

// A float sum whose caller accepts any fixed order (the fp32 gradient reduction) takes the ring
// at every member count: every member gets the same bits, a second run the same bits again, the
// sum is right to float rounding, and over three or more members the bits are not those of
// MPI_Iallreduce's tree (the ring was taken; with two members there is one addition either way).
TEST(MpiRingAllreduce, FloatSumsOfAnyFixedOrderTakeTheRingOnEveryMemberCount) {
  MpiCommunicatorOptions iallreduce;
  iallreduce.ringMinBytes = std::numeric_limits<std::int64_t>::max();
  std::unique_ptr<Communicator> ring = createMpiWorldCommunicator(ringFromZeroBytes(4096));
  std::unique_ptr<Communicator> reference = createMpiWorldCommunicator(iallreduce);
  CollectiveOptions anyOrder = kPatient;
  anyOrder.anyFixedOrder = true;
  at::manual_seed(11 + ring->rank());
  const at::Tensor values = at::randn({100'003}) * at::exp(at::randn({100'003}) * 8);
  at::Tensor viaRing = values.clone();
  at::Tensor again = values.clone();
  at::Tensor viaIallreduce = values.clone();
  at::Tensor magnitude = values.abs();
  ring->allreduce(viaRing, ReduceOp::Sum, anyOrder);
  ring->allreduce(again, ReduceOp::Sum, anyOrder);
  reference->allreduce(viaIallreduce, ReduceOp::Sum, kPatient);
  reference->allreduce(magnitude, ReduceOp::Sum, kPatient);
  EXPECT_EQ(std::memcmp(viaRing.data_ptr(), again.data_ptr(), viaRing.nbytes()), 0);
  const at::Tensor everyMember = ring->allgather(viaRing, kPatient).view({ring->size(), -1});
  for (int r = 0; r < ring->size(); ++r) {
    EXPECT_TRUE(at::equal(everyMember[r], viaRing)) << "member " << r << " holds other bits";
  }
  // Each of the size - 1 roundings is at most half an ulp of a partial sum.
  const double worst = ((viaRing - viaIallreduce).abs() / magnitude).max().item<double>();
  EXPECT_LT(worst, ring->size() * 1.2e-7);
  const bool sameAsTree = std::memcmp(viaRing.data_ptr(), viaIallreduce.data_ptr(), viaRing.nbytes()) == 0;
  EXPECT_EQ(sameAsTree, ring->size() == 2) << "size " << ring->size();
}

// The halves of the ring alone, in tiny and large chunks, at every segment boundary: sums in
// the member's own segment, allgathers of every member's segment.
TEST(MpiRingHalves, ReduceScatterAndSegmentAllgatherAtEveryChunkBoundary) {
  const int size = world().size();
  for (std::int64_t chunkBytes : {std::int64_t(8), std::int64_t(1000), std::int64_t(1) << 20}) {
    std::unique_ptr<Communicator> comm = createMpiWorldCommunicator(ringFromZeroBytes(chunkBytes));
    for (std::int64_t count : {std::int64_t(1), std::int64_t(size - 1), std::int64_t(size + 1),
                               std::int64_t(1001), std::int64_t(10'007)}) {
      if (chunkBytes < 100 && count > 1001) continue;
      const Segment mine = segmentOf(count, size, comm->rank());
      at::Tensor sums = contribution(comm->rank(), at::kLong, count);
      comm->reduceScatter(sums, kPatient);
      EXPECT_TRUE(at::equal(sums.narrow(0, mine.offset, mine.length),
                            expectedReduction(ReduceOp::Sum, size, at::kLong, count)
                                .narrow(0, mine.offset, mine.length)))
          << count << " in chunks of " << chunkBytes << " bytes";
      const at::Tensor whole = contribution(3, at::kFloat, count);
      at::Tensor gathered = onlySegment(whole, size, comm->rank());
      comm->allgatherSegments(gathered, kPatient);
      EXPECT_TRUE(at::equal(gathered, whole)) << count << " in chunks of " << chunkBytes << " bytes";
    }
  }
}

// A member that never joins a reduce-scatter: the others time out, name it, and the failure
// is sticky, as for every other collective.
TEST(MpiRingHalves, MemberThatSkipsAReduceScatterTimesOutTheOthersForGood) {
  std::unique_ptr<Communicator> comm = createMpiWorldCommunicator();
  const int skipper = comm->size() - 1;
  if (comm->rank() != skipper) {
    at::Tensor tensor = at::ones({300'000}, at::kLong);
    std::string message;
    std::vector<int> absent;
    try {
      comm->reduceScatter(tensor, {std::chrono::milliseconds(500)});
      ADD_FAILURE() << "the reduce-scatter completed without the last rank";
    } catch (const tl::TimeoutError& e) {
      message = e.what();
      if (const auto* collective = dynamic_cast<const CollectiveTimeout*>(&e)) absent = collective->absentRanks();
    }
    EXPECT_THAT(message, HasSubstr("reduceScatter(300000 int64"));
    EXPECT_EQ(absent, std::vector<int>{skipper});
    try {
      comm->allgatherSegments(tensor, kPatient);
      ADD_FAILURE() << "a segment allgather succeeded on a failed communicator";
    } catch (const tl::TimeoutError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  world().barrier(kPatient);
}

// A member that never joins a ring allreduce: the others time out under the deadline, name
// it, and the failure is sticky, as for every other collective.
TEST(MpiRingAllreduce, MemberThatSkipsItTimesOutTheOthersForGood) {
  std::unique_ptr<Communicator> comm = createMpiWorldCommunicator(ringFromZeroBytes(4096));
  const int skipper = comm->size() - 1;
  const auto timeout = std::chrono::milliseconds(500);
  if (comm->rank() != skipper) {
    at::Tensor tensor = at::ones({300'000}, at::kLong);
    std::string message;
    std::vector<int> absent;
    try {
      comm->allreduce(tensor, ReduceOp::Sum, {timeout});
      ADD_FAILURE() << "the ring allreduce completed without the last rank";
    } catch (const tl::TimeoutError& e) {
      message = e.what();
      if (const auto* collective = dynamic_cast<const CollectiveTimeout*>(&e)) absent = collective->absentRanks();
    }
    EXPECT_THAT(message, HasSubstr("allreduce(sum, 300000 int64"));
    EXPECT_THAT(message, HasSubstr("rank " + std::to_string(skipper)));
    EXPECT_EQ(absent, std::vector<int>{skipper}) << "the absent rank travels as data, not only as text";
    try {
      comm->barrier(kPatient);
      ADD_FAILURE() << "a barrier succeeded on a failed communicator";
    } catch (const tl::TimeoutError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  world().barrier(kPatient);
}

}  // namespace
}  // namespace tl::comm::testing
