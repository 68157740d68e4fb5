// Which tensors the MPI backend reduces, and how.
#include "runtime/comm/collective_wait.h"
#include "runtime/comm/mpi/mpi_detail.h"

namespace tl::comm::detail {

MPI_Datatype reductionDatatype(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return MPI_FLOAT;
    case at::kDouble:
      return MPI_DOUBLE;
    case at::kInt:
      return MPI_INT32_T;
    case at::kLong:
      return MPI_INT64_T;
    case at::kByte:
      return MPI_UINT8_T;
    default:
      throw Error(str("mpi allreduce does not support dtype ", dtypeName(type),
                      " (supported: float32, float64, int32, int64, uint8)"));
  }
}

MPI_Op reductionOperation(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return MPI_SUM;
    case ReduceOp::Max:
      return MPI_MAX;
    case ReduceOp::Min:
      return MPI_MIN;
  }
  throw Error(str("unknown ReduceOp ", static_cast<int>(op)));
}

}  // namespace tl::comm::detail
