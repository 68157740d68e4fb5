// Conformance: split, large tensors, and a member that never joins (timeout, sticky failure).
#include <gmock/gmock.h>

#include "common/check.h"
#include "tests/runtime/comm/communicator_conformance.h"
#include "tests/runtime/comm/mpi_test_world.h"

namespace tl::comm::testing {
namespace {

using ::testing::HasSubstr;

TEST_P(CommunicatorConformance, SplitIntoOddAndEvenRanksOrderedByKey) {
  const int rank = comm->rank();
  const int parity = rank % 2;
  // key = -rank: the highest old rank of each group becomes its rank 0.
  std::unique_ptr<Communicator> group = comm->split(parity, -rank, patient());
  ASSERT_NE(group, nullptr);
  std::vector<int> members;  // old ranks of my group in the new rank order
  for (int r = comm->size() - 1; r >= 0; --r)
    if (r % 2 == parity) members.push_back(r);
  ASSERT_EQ(group->size(), static_cast<int>(members.size()));
  EXPECT_EQ(members.at(group->rank()), rank);
  EXPECT_EQ(group->backend(), comm->backend());

  at::Tensor sum = onDevice(at::full({3}, rank, at::kLong));
  group->allreduce(sum, ReduceOp::Sum, patient());
  std::int64_t expectedSum = 0;
  for (int member : members) expectedSum += member;
  EXPECT_TRUE(at::equal(sum.cpu(), at::full({3}, expectedSum, at::kLong)));

  const at::Tensor gathered = group->allgather(onDevice(at::scalar_tensor(rank, at::kInt)), patient());
  EXPECT_TRUE(at::equal(gathered.cpu(), at::tensor(members, at::kInt)));

  at::Tensor fromGroupRoot = onDevice(at::full({2}, rank, at::kDouble));
  group->broadcast(fromGroupRoot, 0, patient());
  EXPECT_TRUE(at::equal(fromGroupRoot.cpu(), at::full({2}, members.front(), at::kDouble)));
  group->barrier(patient());

  // The parent is unaffected by its children.
  at::Tensor all = onDevice(at::ones({1}, at::kInt));
  comm->allreduce(all, ReduceOp::Sum, patient());
  EXPECT_EQ(all.cpu().item<int>(), comm->size());
}

TEST_P(CommunicatorConformance, SplitWithEqualKeysKeepsTheOldOrder) {
  std::unique_ptr<Communicator> same = comm->split(3, 0, patient());
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->size(), comm->size());
  EXPECT_EQ(same->rank(), comm->rank());
}

TEST_P(CommunicatorConformance, SplitWithNegativeColorLeavesThatMemberOut) {
  const bool leaveOut = comm->rank() == 0;
  std::unique_ptr<Communicator> rest = comm->split(leaveOut ? -1 : 7, 0, patient());
  if (leaveOut) {
    EXPECT_EQ(rest, nullptr);
    return;
  }
  ASSERT_NE(rest, nullptr);
  EXPECT_EQ(rest->size(), comm->size() - 1);
  EXPECT_EQ(rest->rank(), comm->rank() - 1);
  at::Tensor count = onDevice(at::ones({1}, at::kInt));
  rest->allreduce(count, ReduceOp::Sum, patient());
  EXPECT_EQ(count.cpu().item<int>(), comm->size() - 1);
}

// Larger than the eager/short-message limits of MPI transports, so the rendezvous paths run.
TEST_P(CommunicatorConformance, LargeTensorsOfFiveMillionFloats) {
  const std::int64_t count = 5'000'000;
  const at::Tensor pattern = (at::arange(count, at::kLong) % 1000).to(at::kFloat);
  at::Tensor tensor = onDevice(pattern * (comm->rank() + 1));
  comm->allreduce(tensor, ReduceOp::Sum, patient());
  const int size = comm->size();
  EXPECT_TRUE(at::equal(tensor.cpu(), pattern * (size * (size + 1) / 2)));

  at::Tensor fromLast = onDevice(pattern * comm->rank());
  comm->broadcast(fromLast, size - 1, patient());
  EXPECT_TRUE(at::equal(fromLast.cpu(), pattern * (size - 1)));

  const at::Tensor gathered = comm->allgather(onDevice(pattern + comm->rank()), patient());
  for (int r = 0; r < size; ++r) EXPECT_TRUE(at::equal(gathered[r].cpu(), pattern + r));
}

// The last rank never joins an allreduce; the others must get a TimeoutError after about the
// configured timeout, and from then on the same error from every call. The last rank waits on
// the test world until they are done, then everyone leaves normally (MPI tolerates the
// abandoned operation at MPI_Finalize; its buffers are kept alive until then).
TEST_P(CommunicatorConformance, MemberThatSkipsACollectiveTimesOutTheOthers) {
  const int skipper = comm->size() - 1;
  const auto timeout = std::chrono::milliseconds(500);
  if (comm->rank() != skipper) {
    at::Tensor tensor = onDevice(at::ones({1000}, at::kFloat));
    std::string message;
    const auto start = std::chrono::steady_clock::now();
    try {
      comm->allreduce(tensor, ReduceOp::Sum, {timeout});
      ADD_FAILURE() << "allreduce completed without the last rank";
    } catch (const tl::TimeoutError& e) {
      message = e.what();
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, timeout - std::chrono::milliseconds(5));
    EXPECT_LT(waited, timeout + std::chrono::seconds(3));
    EXPECT_THAT(message, HasSubstr(GetParam().name + " allreduce(sum, 1000 float32"));
    EXPECT_THAT(message, HasSubstr("500 ms"));
    EXPECT_THAT(message, HasSubstr("rank " + std::to_string(comm->rank())));
    EXPECT_THAT(message, HasSubstr("size " + std::to_string(comm->size())));

    // Sticky: every later call fails at once with the very same error, starting nothing.
    const auto stickyStart = std::chrono::steady_clock::now();
    auto expectSameError = [&](const std::function<void()>& call, const char* what) {
      try {
        call();
        ADD_FAILURE() << what << " succeeded on a failed communicator";
      } catch (const tl::TimeoutError& e) {
        EXPECT_EQ(std::string(e.what()), message) << what;
      }
    };
    at::Tensor other = onDevice(at::ones({4}, at::kFloat));
    expectSameError([&] { comm->barrier(patient()); }, "barrier");
    expectSameError([&] { comm->allreduce(other, ReduceOp::Max, patient()); }, "allreduce");
    expectSameError([&] { comm->broadcast(other, 0, patient()); }, "broadcast");
    expectSameError([&] { comm->allgather(other, patient()); }, "allgather");
    expectSameError([&] { comm->split(0, 0, patient()); }, "split");
    EXPECT_LT(std::chrono::steady_clock::now() - stickyStart, std::chrono::seconds(1));
  }
  world().barrier(patient());
}

}  // namespace
}  // namespace tl::comm::testing
