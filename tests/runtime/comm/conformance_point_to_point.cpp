// Conformance: point-to-point (Communicator::startSend/startReceive), for the backends that
// have it (pointToPoint()); the others say they have not and refuse. CPU tensors on every
// backend: the replica a grow sends travels from host memory.
#include <gmock/gmock.h>

#include "common/check.h"
#include "tests/runtime/comm/communicator_conformance.h"
#include "tests/runtime/comm/mpi_test_world.h"

namespace tl::comm::testing {
namespace {

using ::testing::HasSubstr;

// Rank-dependent bytes of every dtype the replica holds, the empty tensor and a 0-dim one.
std::vector<at::Tensor> messagesFrom(int rank) {
  return {contribution(rank, at::kFloat, 37), contribution(rank, at::kLong, 1).reshape({}),
          contribution(rank, at::kByte, 300001), at::empty({0, 3}, at::kDouble),
          contribution(rank, at::kBool, 5)};
}

TEST_P(CommunicatorConformance, PointToPointRoundARingInOrderUnderOneTag) {
  if (!comm->pointToPoint()) {
    at::Tensor t = at::ones({2});
    EXPECT_THROW(comm->startSend(t, 0, 0, patient()), tl::Error);
    GTEST_SKIP() << comm->backend() << " has no point-to-point";
  }
  const int rank = comm->rank(), size = comm->size();
  const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  // Everything is started before anything is waited for; several messages under one tag (in
  // order) and one under another tag, received first.
  std::vector<std::unique_ptr<PendingCollective>> handles;
  const std::vector<at::Tensor> sent = messagesFrom(rank);
  const at::Tensor other = at::full({4}, 100 + rank, at::kInt);
  for (const at::Tensor& t : sent) handles.push_back(comm->startSend(t, next, 3, patient()));
  handles.push_back(comm->startSend(other, next, Communicator::kPointToPointTags - 1, patient()));
  at::Tensor otherIn = at::zeros({4}, at::kInt);
  handles.push_back(comm->startReceive(otherIn, previous, Communicator::kPointToPointTags - 1, patient()));
  std::vector<at::Tensor> received;
  for (const at::Tensor& t : messagesFrom(previous)) {
    received.push_back(at::empty_like(t));
    handles.push_back(comm->startReceive(received.back(), previous, 3, patient()));
  }
  for (auto& h : handles) h->wait();
  for (auto& h : handles) EXPECT_TRUE(h->test());
  EXPECT_TRUE(at::equal(otherIn, at::full({4}, 100 + previous, at::kInt)));
  const std::vector<at::Tensor> want = messagesFrom(previous);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(at::equal(received[i], want[i])) << "message " << i;
  // The collectives' order is untouched by point-to-point.
  at::Tensor sum = at::ones({3}, at::kLong);
  comm->allreduce(sum, ReduceOp::Sum, patient());
  EXPECT_TRUE(at::equal(sum, at::full({3}, size, at::kLong)));
}

TEST_P(CommunicatorConformance, PointToPointFromSeveralSendersIntoViewsOfOneTensor) {
  if (!comm->pointToPoint()) GTEST_SKIP() << comm->backend() << " has no point-to-point";
  // Rank 0 takes the byte range [r * 1000, (r + 1) * 1000) of one tensor from every rank r, by
  // polling test() until all are complete.
  const int rank = comm->rank(), size = comm->size();
  const at::Tensor all = at::arange(size * 1000, at::kFloat);
  if (rank == 0) {
    at::Tensor whole = at::zeros({size * 1000}, at::kFloat);
    whole.narrow(0, 0, 1000).copy_(all.narrow(0, 0, 1000));
    std::vector<std::unique_ptr<PendingCollective>> handles;
    for (int r = 1; r < size; ++r) {
      at::Tensor bytes = whole.view(at::kByte).narrow(0, r * 4000, 4000);
      handles.push_back(comm->startReceive(bytes, r, 0, patient()));
    }
    for (bool done = false; !done;) {
      done = true;
      for (auto& h : handles) done = h->test() && done;
    }
    EXPECT_TRUE(at::equal(whole, all));
  } else {
    comm->startSend(all.narrow(0, rank * 1000, 1000), 0, 0, patient())->wait();
  }
  comm->barrier(patient());
}

TEST_P(CommunicatorConformance, PointToPointRefusesMisuseAndStaysUsable) {
  if (!comm->pointToPoint()) GTEST_SKIP() << comm->backend() << " has no point-to-point";
  const int rank = comm->rank(), size = comm->size();
  at::Tensor t = at::ones({4}, at::kFloat);
  EXPECT_THROW(comm->startSend(t, rank, 0, patient()), tl::Error);  // itself
  EXPECT_THROW(comm->startSend(t, size, 0, patient()), tl::Error);
  EXPECT_THROW(comm->startReceive(t, (rank + 1) % size, -1, patient()), tl::Error);
  EXPECT_THROW(comm->startReceive(t, (rank + 1) % size, Communicator::kPointToPointTags, patient()), tl::Error);
  at::Tensor strided = at::ones({4, 4}).t();
  EXPECT_THROW(comm->startSend(strided, (rank + 1) % size, 0, patient()), tl::Error);
  comm->barrier(patient());
}

}  // namespace
}  // namespace tl::comm::testing
