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
// tl::TimeoutError. Members lost (comm::abandonCollectives, runtime/comm/collective_timeout.h):
// a communicator made before it aborts its NCCL communicator at the running collective's next
// poll, or at the next call, which throws comm::MembersLost, as every later one does.
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

// After members of the job were lost: gives `nccl` (made by createNcclCommunicator) up for good.
// Its NCCL communicator is aborted now (ncclCommAbort: local, and it stops kernels waiting for a
// lost peer), unless it failed already, and every later call on it throws comm::MembersLost.
// Destroying it afterwards destroys no NCCL communicator (one abandoned by abandonCollectives
// is aborted, never ncclCommDestroy'ed, whether or not this was called). Training thread, as
// every call on it. tl::Error for a communicator of another backend or without NCCL.
void abandonNcclCommunicator(Communicator& nccl);

}  // namespace tl::comm
