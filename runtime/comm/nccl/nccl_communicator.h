// NCCL backend for CUDA tensors. Built when TL_HAVE_NCCL; bootstraps its unique id through an
// existing communicator (MPI). Light header: no CUDA or NCCL headers here.
#pragma once

#include <memory>

#include "runtime/comm/communicator.h"

namespace tl::comm {

// True when this build has the NCCL backend.
bool ncclAvailable();

// Creates an NCCL communicator over the members of `bootstrap`, using CUDA device `device`.
// Throws tl::Error when NCCL is not built in or the device is unusable.
std::unique_ptr<Communicator> createNcclCommunicator(Communicator& bootstrap, int device);

}  // namespace tl::comm
