// NCCL backend for CUDA tensors. Built when TL_HAVE_NCCL; bootstraps its unique id through an
// existing communicator (MPI). Light header: no CUDA or NCCL headers here.
//
// Streams: collectives run on the communicator's own non-blocking CUDA stream, which first waits
// (an event) for the work queued so far on the caller's current stream, where libtorch computed
// the tensors. A blocking call returns once its stream is done, so results are ready for any
// stream; startAllreduce returns at once, and its PendingCollective polls an event recorded
// after the allreduce (test() never blocks; wait() yields to other fibers), so the allreduce
// runs beside the kernels queued after it (--overlap: backward's). Timeouts: on expiry the NCCL
// communicator is aborted (ncclCommAbort) and the call, and every later one, throws
// tl::TimeoutError.
#pragma once

#include <memory>

#include "runtime/comm/communicator.h"

namespace tl::comm {

// True when this build has the NCCL backend.
bool ncclAvailable();

// CUDA devices this process could use for NCCL: 0 without the NCCL backend, a CUDA driver or
// a device. Lets callers and tests decide without CUDA headers.
int ncclVisibleDeviceCount();

// Creates an NCCL communicator over the members of `bootstrap`, using CUDA device `device`.
// Collective over `bootstrap`: members agree on success first, so a bad device on one member
// fails all of them promptly. Throws tl::Error when NCCL is not built in or a device is
// unusable. Tensors passed to it must be contiguous CUDA tensors on `device`.
std::unique_ptr<Communicator> createNcclCommunicator(Communicator& bootstrap, int device);

}  // namespace tl::comm
