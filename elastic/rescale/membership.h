// The members of a job that can be rescaled in place: this process's communicators, who the
// members are (host, device), and how a layout command changes them at a step boundary (new
// processes admitted, leavers split off, NCCL rebuilt, then the executor's layout change).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "elastic/rescale/layout_command.h"
#include "elastic/rescale/membership_recorder.h"
#include "est/executor.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/mpi/mpi_spawn.h"

namespace tl::elastic {

// The communicators of this process's job: the host one (MPI) and, for GPU jobs over NCCL, the
// device one built on it. Replaced as a whole when the job's members change.
struct Membership {
  std::unique_ptr<comm::Communicator> host;
  std::unique_ptr<comm::Communicator> gpu;  // null: gradients travel over `host`
  bool useNccl = false;                      // --device cuda with --gpu-comm nccl
  int deviceIndex = 0;
  bool startedWithTheJob = true;  // false: started by an in-place grow
  comm::Communicator& device() { return gpu ? *gpu : *host; }
  // Resource recording: the executor gets the recorder's views of host/gpu (null: the raw ones).
  MembershipRecorder* recorder = nullptr;
  // What the executor is given for `raw`: the recorder's view of it (made once, kept with it).
  comm::Communicator& forExecutor(comm::Communicator& raw);
  // Moves `raw` and its view into `retired` (they stay alive until the layout change is done).
  void retire(std::unique_ptr<comm::Communicator> raw, std::vector<std::unique_ptr<comm::Communicator>>& retired);

 private:
  std::map<const comm::Communicator*, std::unique_ptr<comm::Communicator>> views_;
};

// Who the members are, by rank (for status and for the device a started process takes).
struct MemberList {
  std::vector<std::string> hosts;
  std::vector<int> devices;  // device index: the member's local rank on its host
  std::vector<int64_t> pids;
  int startedByGrows = 0;
};
// Collective over `members` (the executor's host communicator).
MemberList gatherMembers(comm::Communicator& members, const Membership& membership);

// How long the last change took: new communicators (join, split, NCCL), then changeLayout, of
// which `transfer` moved the replica to joining members.
struct ChangeSeconds {
  double communicators = 0;
  double layout = 0;
  double transfer = 0;
};

// On the lead: the j-th started process of `command`, told to join with the ESTs per member
// before the change (grow.h). Elsewhere the callback is not called.
using JoinerLink = std::function<comm::SpawnedProcess*(int64_t j, const std::vector<int>& current)>;

// Applies `command` on this member: admits its joiners (`joining`: this process is one of them,
// its command carries `current`), splits off its leavers, rebuilds NCCL, and changes the
// executor's layout. Collective over the members (plus joiners). Returns false when this
// process left the job.
bool changeMembers(Membership& membership, const LayoutCommand& command, est::EstExecutor& executor,
                   comm::ParentLink* joining, bool lead, const JoinerLink& joinerLink, ChangeSeconds& took);

}  // namespace tl::elastic
