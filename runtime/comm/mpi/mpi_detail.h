// Internals of the MPI backend shared by its files; not for callers (it includes <mpi.h>).
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/check.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/mpi/mpi_communicator.h"

namespace tl::comm::detail {

[[noreturn]] void throwMpiError(int code, const char* call, const char* file, int line);

// Throws tl::Error unless an MpiSession is alive and this is the thread that created it (the
// only thread tl's communicators are used from). `operation` names the call for the message.
void checkOnMpiThread(const char* operation);

// Keeps the buffers of MPI operations abandoned after a timeout alive until MPI_Finalize: a
// late peer can still complete such an operation and write into them.
void keepAliveUntilFinalize(std::vector<at::Tensor> buffers);

// Waits until whoever reads `fd` (mpirun's I/O forwarding, when it is a pipe) has taken
// everything written to it, for at most `limit`; false if it has not by then. Returns true at
// once for files and terminals. abortJob waits so that a rank's last words are on their way
// before MPI_Abort's banner is.
bool waitUntilRead(int fd, std::chrono::milliseconds limit);

// The MPI datatype tl reduces `type` with; tl::Error for dtypes allreduce does not support.
MPI_Datatype reductionDatatype(at::ScalarType type);
MPI_Op reductionOperation(ReduceOp op);

// Tags below this are the rings' (mpi_ring_allreduce.h); Communicator::kPointToPointTags from it
// on are point-to-point's (mpi_point_to_point.cpp).
int ringTagLimit(MPI_Comm comm);

// The MPI communicator behind an MPI backend's Communicator (tl::Error for other backends).
MPI_Comm mpiHandle(Communicator& comm);
// The options an MPI backend's Communicator was made with (tl::Error for other backends).
const MpiCommunicatorOptions& mpiOptions(Communicator& comm);
// A Communicator owning `comm` (freed when it is destroyed).
std::unique_ptr<Communicator> adoptMpiCommunicator(MPI_Comm comm, const MpiCommunicatorOptions& options = {});

// Frees a derived datatype when the scope ends. MPI allows this as soon as the operations
// using it are started.
class ScopedDatatype {
 public:
  ScopedDatatype() = default;
  ~ScopedDatatype() {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  ScopedDatatype(const ScopedDatatype&) = delete;
  ScopedDatatype& operator=(const ScopedDatatype&) = delete;
  MPI_Datatype* out() { return &type_; }
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace tl::comm::detail

// Checks the return code of an MPI call; on failure throws tl::Error with file:line, the call
// and MPI's own description of the error.
#define TL_MPI_CHECK(call)                                                    \
  do {                                                                        \
    const int tl_mpi_rc_ = (call);                                            \
    if (tl_mpi_rc_ != MPI_SUCCESS)                                            \
      ::tl::comm::detail::throwMpiError(tl_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
