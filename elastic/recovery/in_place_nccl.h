// In-place recovery of a job whose gradients travel over NCCL (in_place.h): its NCCL
// communicator, whose members include the lost, is aborted and never destroyed; once the
// survivors agreed on the boundary, they make a new one among themselves. Both on the training
// thread, inside recoverInPlace.
#pragma once

#include <memory>

#include "elastic/recovery/in_place.h"
#include "runtime/comm/communicator.h"

namespace tl::elastic {

// Right after the loss: aborts the job's NCCL communicator (ncclCommAbort: local, and kernels
// waiting for the lost member stop, which frees the GPU stream), unless a collective already
// did when it saw the loss. Nothing for a job without NCCL.
void abandonJobNccl(const JobNccl& nccl);

// After the agreement, collective over `survivors` (their MPI communicator): NCCL among them on
// this process's device, with a new unique id broadcast over `survivors`. Null for a job without
// NCCL. tl::Error when it cannot be set up; a bad device fails every survivor alike (they agree
// on their devices before initialising NCCL).
std::unique_ptr<comm::Communicator> ncclAmongSurvivors(comm::Communicator& survivors, const JobNccl& nccl);

}  // namespace tl::elastic
