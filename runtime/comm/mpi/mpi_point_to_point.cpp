// MpiCommunicator's point-to-point (Communicator::startSend/startReceive): MPI_Isend/MPI_Irecv of
// bytes, on tags above those the rings use (ringTagLimit), outside the roll call's count of
// collectives (members take part in different messages).
#include <algorithm>
#include <memory>

#include <ATen/ATen.h>

#include "runtime/comm/mpi/mpi_communicator_class.h"

namespace tl::comm::detail {

std::unique_ptr<PendingCollective> MpiCommunicator::startSend(const at::Tensor& tensor, int peer, int tag,
                                                              const CollectiveOptions& options) {
  return startPointToPoint("send", const_cast<at::Tensor&>(tensor), peer, tag, options);
}

std::unique_ptr<PendingCollective> MpiCommunicator::startReceive(at::Tensor& tensor, int peer, int tag,
                                                                 const CollectiveOptions& options) {
  return startPointToPoint("receive", tensor, peer, tag, options);
}

// The bytes travel in messages of at most maxCountPerCall, in order, under one MPI tag: both
// sides cut them alike (members of a communicator share its options).
std::unique_ptr<PendingCollective> MpiCommunicator::startPointToPoint(const char* operation, at::Tensor& tensor,
                                                                      int peer, int tag,
                                                                      const CollectiveOptions& options) {
  enter(operation);
  TL_CHECK(tensor.defined() && tensor.device().is_cpu() && tensor.is_contiguous(), "mpi ", operation,
           " needs a contiguous CPU tensor, got ", describeTensor(tensor));
  TL_CHECK(peer >= 0 && peer < size_ && peer != rank_, "mpi ", operation, " with rank ", peer, " from rank ",
           rank_, " of ", size_);
  TL_CHECK(tag >= 0 && tag < kPointToPointTags, "mpi ", operation, " with tag ", tag);
  const bool send = operation[0] == 's';
  const int mpiTag = ringTagLimit(comm_) + tag;
  auto* base = static_cast<char*>(tensor.data_ptr());
  const std::int64_t bytes = std::int64_t(tensor.nbytes());
  Started started = begin(
      {tensor}, options,
      [&](std::vector<MPI_Request>& requests) {
        for (std::int64_t offset = 0; offset < bytes; offset += options_.maxCountPerCall) {
          const int count = static_cast<int>(std::min(options_.maxCountPerCall, bytes - offset));
          requests.push_back(MPI_REQUEST_NULL);
          if (send) {
            TL_MPI_CHECK(MPI_Isend(base + offset, count, MPI_BYTE, peer, mpiTag, comm_, &requests.back()));
          } else {
            TL_MPI_CHECK(MPI_Irecv(base + offset, count, MPI_BYTE, peer, mpiTag, comm_, &requests.back()));
          }
        }
      },
      /*collective=*/false);
  started.peer = peer;
  return pending(std::move(started), operation,
                 str(operation, send ? " to rank " : " from rank ", peer, " (tag ", tag, ", ",
                     describeTensor(tensor), ")"));
}

}  // namespace tl::comm::detail
