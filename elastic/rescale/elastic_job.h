// In-place rescale of a running job on command (tl-ctl): which processes are members, how a
// request becomes a layout change at a step boundary, and how a process started to grow the job
// joins it. docs/design.md ("In-place rescale") has the protocol.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "elastic/checkpoint_policy.h"
#include "elastic/placement/auto_placement.h"
#include "est/executor.h"
#include "control/control_server.h"
#include "elastic/rescale/membership_recorder.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/mpi/mpi_spawn.h"
#include "runtime/train/metrics.h"

namespace tl::launcher {

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

// What a started process needs to become a member: the job, its device and the launch settings
// every member applies the same way. Sent by the lead as JSON.
struct JoinOffer {
  JobConfig job;
  std::string gpuComm = "nccl";
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  int64_t stopAtStep = 0;
  std::string recoveryDir;  // tl-run's: the job keeps a copy of itself for recovery (recovery_guard.h)
  elastic::AutoPlacementOptions autoPlacement;  // every member takes part in its measurements
};
nlohmann::json toJson(const JoinOffer& offer);
JoinOffer joinOfferFromJson(const nlohmann::json& json);

struct ElasticSettings {
  std::string program;        // this executable, for started processes
  std::string controlBind;    // empty: no control channel
  int slots = 0;              // processes mpirun may run at once (MPI universe size); 0: unknown
  bool oversubscribe = false; // mpirun --oversubscribe: no slot limit
  int startedWithTheJob = 0;  // processes mpirun started (they live until the job ends)
  int controlPort = 0;
  double joinTimeoutSeconds = 300;  // a started process that is not ready by then is given up
  JoinOffer offer;            // the template every started process gets (device index filled in)
};

// A layout change every member applies at the same step boundary (broadcast by the lead).
struct LayoutCommand {
  enum Kind : int64_t { None = 0, Placement = 1, Rescale = 2, Checkpoint = 3, Stop = 4 };
  Kind kind = None;
  int64_t joiners = 0;           // started processes that join, in order, after the members
  std::vector<int> target;       // ESTs per member of the new layout (members that stay, then joiners)
  std::vector<int> leave;        // 1 for each member (of the widened job) that leaves
  bool checkpoint = false;       // Stop: write one first
  std::vector<int> current;      // a joiner's copy of the ESTs per member before the change
};

// The StepObserver of a job that can be rescaled in place. On every member, after the checkpoint
// policy, one small broadcast from the lead says what (if anything) changes at this boundary;
// the lead takes requests from the control server, refuses what cannot be done (with the reason),
// starts the processes a grow needs on a helper thread while the job trains, and answers each
// request once it is applied.
class ElasticController final : public est::StepObserver {
 public:
  ElasticController(Membership& membership, elastic::CheckpointPolicy& policy, ElasticSettings settings,
                    train::MetricsLog* metrics);
  ~ElasticController() override;

  est::StepAction afterStep(int64_t stepsDone, est::EstExecutor& executor) override;

  // Applies `command` on this member (and, in a started process, from its join on). Collective
  // over the current members (plus joiners). Returns false when this process left the job.
  bool apply(const LayoutCommand& command, est::EstExecutor& executor, comm::ParentLink* joining);

  // Starts the control server (lead only). Every member constructs the controller; only the
  // lead listens.
  void startControl(est::EstExecutor& executor);
  int rescales() const { return rescales_; }
  // Adds `key` to what `tl-ctl status` shows (lead; e.g. the failures a recovery survived).
  void annotateStatus(const std::string& key, nlohmann::json value);
  // --placement auto / --emulate-*: consulted at every boundary, before the lead's broadcast;
  // its moves are placement changes like tl-ctl's (elastic/placement/auto_placement.h).
  void setAutoPlacer(elastic::AutoPlacer* placer) { autoPlacer_ = placer; }
  elastic::AutoPlacer* autoPlacer() const { return autoPlacer_; }
  double maxPauseSeconds() const { return maxPause_; }
  // The job is over: answers what is still waiting (and stops started processes).
  void finish(const std::string& why);

 private:
  struct Grow;
  struct Pending;
  LayoutCommand nextCommand(int64_t stepsDone, est::EstExecutor& executor);
  std::optional<std::string> check(const control::Request& request, const est::EstExecutor& executor,
                                   LayoutCommand& command) const;
  bool dueAt(int64_t stepsDone) const;
  void startGrow(int count, const std::vector<control::HostSlots>& hosts);
  void updateStatus(int64_t stepsDone, est::EstExecutor& executor);
  void gatherHosts(est::EstExecutor& executor);
  std::string statusJson() const;
  bool lead() const { return membership_.host && membership_.host->rank() == 0; }

  Membership& membership_;
  elastic::CheckpointPolicy& policy_;
  ElasticSettings settings_;
  train::MetricsLog* metrics_;
  elastic::AutoPlacer* autoPlacer_ = nullptr;
  std::unique_ptr<control::ControlServer> server_;
  std::unique_ptr<Pending> pending_;  // the request being carried out (lead)
  std::deque<std::unique_ptr<Pending>> queue_;  // the ones after it, in arrival order (lead)
  std::unique_ptr<Grow> grow_;        // processes being started for it (lead)
  int rescales_ = 0;
  int64_t requestsReceived_ = 0;  // control requests taken from the server, ever (status)
  double maxPause_ = 0;
  double lastJoinSeconds_ = 0;    // the last change: new communicators (join, split, NCCL)
  double lastLayoutSeconds_ = 0;  // the last change: changeLayout
  std::vector<std::string> memberHosts_;  // by rank (lead)
  std::vector<int> memberDevices_;        // by rank (lead)
  int startedSince_ = 0;                  // members started by grows (lead)

  mutable std::mutex statusMutex_;
  nlohmann::json status_;
  double lastStepTime_ = 0;
};

// A process started by a grow: receives the offer, builds its executor while the job trains,
// says it is ready, waits for its join, joins. Returns the executor, its membership and the
// command to apply with the job's members, or nullptr when the lead cancelled (the reason is
// logged). InputError/Error when building failed (already reported to the lead).
// `beforeBuild` is called with the job once the offer is in, before anything is built.
struct JoinedProcess {
  JoinOffer offer;
  Membership membership;
  std::vector<std::unique_ptr<comm::Communicator>> retired;  // until the first layout change is done
  std::unique_ptr<est::EstExecutor> executor;
  LayoutCommand command;
};
std::unique_ptr<JoinedProcess> joinRunningJob(comm::ParentLink& lead,
                                              const std::function<void(const JobConfig&)>& beforeBuild = {});

}  // namespace tl::launcher
