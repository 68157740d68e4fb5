// NCCL backend for CUDA tensors. Built when TL_HAVE_NCCL; bootstraps its unique id through an
// existing communicator (MPI). Light header: no CUDA or NCCL headers here.
//
// Streams: collectives run on the communicator's own CUDA stream, created blocking so that it
// orders itself after work queued on the legacy default stream (where tl's libtorch kernels
// run), and every call returns only once its stream is done, so results are ready for any
// stream. Timeouts: on expiry the NCCL communicator is aborted (ncclCommAbort) and the call,
// and every later one, throws tl::TimeoutError.
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
