// In-place recovery: when a member of the job is lost, the survivors keep their processes and go
// on over a communicator of the survivors, at the last step boundary any of them completed, with
// nothing written to disk (tl-run's default, `--recovery in-place`; docs/design/recovery.md).
//
// Detection is the recovery guard's member watcher (RecoveryGuard::watchMembers: the members'
// processes on this host, polled every 20 ms), which abandons the job's collectives, so that the
// training thread leaves run() with comm::MembersLost. recoverInPlace then, on the training
// thread: waits 0.2 s after the first detection for losses that come together, builds the
// survivors' communicator (MPI_Comm_create_group over the old one: collective over the
// survivors only), agrees over it on the lost ranks and the boundary (the newest any survivor
// holds: k, or k+1 when one had begun update k+1; a survivor behind takes the whole state from
// the lowest-ranked one ahead), re-places the N ESTs evenly over the survivors with every
// context from that boundary, and takes a new snapshot. The lead may be among the lost: the
// lowest surviving rank is rank 0 of the survivors' communicator and takes over its duties
// (launcher/training_process.cpp). A job whose gradients travel over NCCL has its NCCL
// communicator aborted first (ncclCommAbort: kernels waiting for the lost member stop) and a new
// one made over the survivors after the agreement (a new unique id over the survivors'
// communicator; in_place_nccl.h). When in place cannot work (a survivor's view of the losses
// differs, a loss during the agreement, it does not complete within the collective timeout, or
// NCCL cannot be set up among the survivors), the process writes its copy of the job for tl-run's
// restart, says why in one line, and exits: the restart path takes over.
#pragma once

#include <functional>
#include <memory>

#include "elastic/recovery/recovery_guard.h"
#include "est/executor.h"
#include "runtime/comm/communicator.h"

namespace tl::elastic {

// This process lost a peer and went on: MPI_Finalize would wait for the lost member, so the
// process must end with _exit once its output is flushed (tl-launch's main does).
bool recoveredInPlace();
// Under tl-run with in place armed (kInPlaceEnv, read by tl-launch): appends a non-zero exit
// status to `path` (kExitFileEnv's file; mpirun --enable-recovery exits 0 whatever its
// processes' statuses). Nothing when `path` is null or empty. Any thread.
void noteExitStatus(const char* path, int status);

// The survivors' communicators (raw): MPI, and NCCL for a job whose gradients travel over it.
struct SurvivorCommunicators {
  std::unique_ptr<comm::Communicator> host;
  std::unique_ptr<comm::Communicator> gpu;  // null: the gradients travel over `host`
};
// What the executor is given for them (the usage recorder's views, or themselves).
struct ExecutorCommunicators {
  comm::Communicator& host;
  comm::Communicator& device;
};
// Takes the survivors' communicators, keeps them for the job in place of the old ones (which
// must never be destroyed: their members include the lost), and returns the executor's.
using AdoptSurvivors = std::function<ExecutorCommunicators(SurvivorCommunicators)>;

// The job's NCCL communicator (raw), when its gradients travel over NCCL, and its CUDA device.
struct JobNccl {
  comm::Communicator* communicator = nullptr;  // null: the job uses no NCCL
  int deviceIndex = 0;
};

// What the survivors agreed on.
struct WentOnInPlace {
  std::vector<int> lost;  // ranks in the job that lost them (sorted)
  int64_t boundary = 0;   // the step they went on from
  bool leadLost() const { return !lost.empty() && lost.front() == 0; }
};

// On the training thread, after run() threw comm::MembersLost; `oldHost` is the raw MPI
// communicator of the job that lost members. Returns once the executor goes on over the
// survivors (call run() again); does not return when in place cannot work (see above).
WentOnInPlace recoverInPlace(RecoveryGuard& guard, comm::Communicator& oldHost, est::EstExecutor& executor,
                             const AdoptSurvivors& adopt, const JobNccl& nccl);

}  // namespace tl::elastic
