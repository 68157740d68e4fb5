#include "runtime/comm/communicator.h"

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

void Communicator::setTimeout(std::chrono::milliseconds timeout) {
  TL_CHECK(timeout.count() > 0, "a collective timeout must be positive (got ", timeout.count(), " ms)");
  timeout_ = timeout;
}

}  // namespace tl::comm
