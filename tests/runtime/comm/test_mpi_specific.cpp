// What only the MPI backend promises: the session, the owning thread, chunked large counts.
#include <thread>

#include <gmock/gmock.h>
#include <torch/torch.h>

#include "common/check.h"
#include "runtime/comm/mpi/mpi_communicator.h"
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

}  // namespace
}  // namespace tl::comm::testing
