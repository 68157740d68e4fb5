// The grow protocol, the lead's side. A grow's processes are started one by one on a helper
// thread (each its own MPI job, so each can later leave alone) while the job trains:
//
//   started process                      lead
//   {"hello": host}               ->
//                                 <-     the JoinOffer (its device: the lowest free on its host)
//   {"ready": true} | {"failed": why} ->
//                                 <-     {"join": {"index", "after", "command"}} | {"cancel": why}
//
// then comm::admitProcess / joinLead at the step boundary of the command. The started
// process's side is join_running_job.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/control_protocol.h"
#include "elastic/placement/auto_placement_options.h"
#include "elastic/rescale/layout_command.h"
#include "elastic/rescale/membership.h"
#include "runtime/comm/mpi/mpi_spawn.h"
#include "runtime/job_config.h"

namespace tl::elastic {

// What a started process needs to become a member: the job, its device and the launch settings
// every member applies the same way. Sent by the lead as JSON.
struct JoinOffer {
  JobConfig job;
  std::string gpuComm = "nccl";
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  int64_t stopAtStep = 0;
  std::string recoveryDir;  // tl-run's: the job keeps a copy of itself for recovery (recovery_guard.h)
  AutoPlacementOptions autoPlacement;  // every member takes part in its measurements
  // How the started process warms up before it says it is ready (join_running_job.h): 2 in full
  // (the default), 1 one forward and backward of a built-in model (as before issue 43), 0 not at
  // all; set by TL_JOIN_WARMUP on the lead, only to measure what the warm-up saves
  // (bench_inplace_rescale).
  int warmUp = 2;
};
nlohmann::json toJson(const JoinOffer& offer);
JoinOffer joinOfferFromJson(const nlohmann::json& json);

// Processes being started for a grow, on the lead. The training thread polls it once per step.
class Grow {
 public:
  // Starts `count` processes of `program` on `hosts` (empty: where mpirun places them), each
  // offered `offer` with a device index no member (`members`) on its host uses.
  Grow(const std::string& program, int count, const std::vector<control::HostSlots>& hosts,
       const MemberList& members, JoinOffer offer);
  ~Grow();  // waits for the helper thread; cancel() first unless the processes joined
  Grow(const Grow&) = delete;
  Grow& operator=(const Grow&) = delete;

  // Why the grow failed (a process failed or was not ready within `timeoutSeconds`), or
  // nullopt. ready() says whether every process is ready to join.
  std::optional<std::string> poll(double timeoutSeconds);
  bool ready() const;
  double startSeconds() const { return startSeconds_; }  // until every process was ready

  // Tells the j-th process to join with `command` (members' ESTs before it: `current`).
  comm::SpawnedProcess* join(int64_t j, const LayoutCommand& command, const std::vector<int>& current);
  // Tells every started process that it will not join (it then exits on its own).
  void cancel(const std::string& why);

 private:
  std::thread thread_;
  std::atomic<bool> started_{false};  // the thread is done (successfully or not)
  std::string error_;                 // why starting failed (written by the thread before `started_`)
  std::vector<std::unique_ptr<comm::SpawnedProcess>> processes_;
  std::vector<bool> ready_;
  std::chrono::steady_clock::time_point begin_ = std::chrono::steady_clock::now();
  double startSeconds_ = 0;
};

}  // namespace tl::elastic
