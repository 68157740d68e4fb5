#include "runtime/comm/communicator.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "common/check.h"

namespace tl::comm {

const char* toString(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
  }
  return "?";
}

namespace {

class CompletedCollective final : public PendingCollective {
 public:
  bool test() override { return true; }
  void wait() override {}
};

}  // namespace

std::unique_ptr<PendingCollective> Communicator::startAllreduce(at::Tensor& tensor, ReduceOp op,
                                                                const CollectiveOptions& options) {
  allreduce(tensor, op, options);
  return std::make_unique<CompletedCollective>();
}

Segment segmentOf(std::int64_t numel, int size, int rank) {
  TL_CHECK(numel >= 0 && size >= 1 && rank >= 0 && rank < size, "segmentOf(", numel, ", size ",
           size, ", rank ", rank, ")");
  const std::int64_t base = numel / size;
  const std::int64_t longer = numel % size;
  return {rank * base + std::min<std::int64_t>(rank, longer), base + (rank < longer ? 1 : 0)};
}

std::unique_ptr<PendingCollective> Communicator::startReduceScatter(
    at::Tensor& tensor, const CollectiveOptions& options) {
  allreduce(tensor, ReduceOp::Sum, options);
  return std::make_unique<CompletedCollective>();
}

std::unique_ptr<PendingCollective> Communicator::startAllgatherSegments(
    at::Tensor& tensor, const CollectiveOptions& options) {
  TL_CHECK(tensor.defined() && tensor.is_contiguous(), "allgatherSegments works in place on a "
           "contiguous tensor");
  at::Tensor flat = tensor.view({-1});
  const std::int64_t numel = flat.numel();
  const Segment mine = segmentOf(numel, size(), rank());
  const std::int64_t longest = segmentOf(numel, size(), 0).length;
  at::Tensor padded = at::zeros({longest}, flat.options());
  padded.narrow(0, 0, mine.length).copy_(flat.narrow(0, mine.offset, mine.length));
  const at::Tensor all = allgather(padded, options);  // [size, longest]
  for (int r = 0; r < size(); ++r) {
    const Segment theirs = segmentOf(numel, size(), r);
    flat.narrow(0, theirs.offset, theirs.length).copy_(all[r].narrow(0, 0, theirs.length));
  }
  return std::make_unique<CompletedCollective>();
}

void Communicator::reduceScatter(at::Tensor& tensor, const CollectiveOptions& options) {
  startReduceScatter(tensor, options)->wait();
}

void Communicator::allgatherSegments(at::Tensor& tensor, const CollectiveOptions& options) {
  startAllgatherSegments(tensor, options)->wait();
}

std::unique_ptr<PendingCollective> Communicator::startSend(const at::Tensor&, int, int, const CollectiveOptions&) {
  throw Error(str("the ", backend(), " communicator has no point-to-point send"));
}

std::unique_ptr<PendingCollective> Communicator::startReceive(at::Tensor&, int, int, const CollectiveOptions&) {
  throw Error(str("the ", backend(), " communicator has no point-to-point receive"));
}

void Communicator::setTimeout(std::chrono::milliseconds timeout) {
  TL_CHECK(timeout.count() > 0, "a collective timeout must be positive (got ", timeout.count(), " ms)");
  timeout_ = timeout;
}

}  // namespace tl::comm
