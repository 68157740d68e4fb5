// In-place rescale of a running job on command (tl-ctl): the controller that sequences a
// request into a layout change at a step boundary. Its parts: the layout command
// (layout_command.h), the request checks (request_check.h, host_lookup.h), the members and how
// they change (membership.h) and the grow protocol (grow.h, join_running_job.h).
// docs/design/elasticity.md ("In-place rescale: the protocol") has the protocol.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/control_server.h"
#include "elastic/checkpoint/checkpoint_policy.h"
#include "elastic/placement/auto_placement.h"
#include "elastic/rescale/grow.h"
#include "elastic/rescale/layout_command.h"
#include "elastic/rescale/membership.h"
#include "est/executor.h"
#include "runtime/train/metrics.h"

namespace tl::elastic {

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

// The StepObserver of a job that can be rescaled in place. On every member, after the checkpoint
// policy, one small broadcast from the lead says what (if anything) changes at this boundary;
// the lead takes requests from the control server, refuses what cannot be done (with the reason),
// starts the processes a grow needs on a helper thread while the job trains, and answers each
// request once it is applied.
//
// Threading: the training thread, except statusJson() (the control server's thread) and the
// helpers of a grow and a host lookup, which never touch the communicators.
class ElasticController final : public est::StepObserver {
 public:
  ElasticController(Membership& membership, CheckpointPolicy& policy, ElasticSettings settings,
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
  const JoinOffer& offer() const { return settings_.offer; }  // the job's launch settings
  // Adds `key` to what `tl-ctl status` shows (lead; e.g. the failures a recovery survived).
  void annotateStatus(const std::string& key, nlohmann::json value);
  // --placement auto / --emulate-*: consulted at every boundary, before the lead's broadcast;
  // its moves are placement changes like tl-ctl's (elastic/placement/auto_placement.h).
  void setAutoPlacer(AutoPlacer* placer) { autoPlacer_ = placer; }
  AutoPlacer* autoPlacer() const { return autoPlacer_; }
  double maxPauseSeconds() const { return maxPause_; }
  // The members by rank (host, device, pid) as of the last change of members, and who is told
  // of each change (on the training thread, right after the collective that finds them out).
  const MemberList& members() const { return members_; }
  void onMembersChanged(std::function<void(const MemberList&)> listener) {
    membersChanged_ = std::move(listener);
  }
  // The job is over: answers what is still waiting (and stops started processes).
  void finish(const std::string& why);
  // The survivors went on in place after members were lost (elastic/recovery/in_place.h):
  // collective over the survivors. The member table is gathered again (and its listener told);
  // a grow in flight is cancelled.
  void survivorsWentOn(est::EstExecutor& executor);
  // The lead was lost and this process is rank 0 of the survivors: it logs to `metrics` from
  // now on and starts the control server (republishing control.json with the job's key), or
  // says in one line why it could not.
  void takeOverLead(est::EstExecutor& executor, train::MetricsLog* metrics);

 private:
  struct Pending;
  est::StepAction boundary(int64_t stepsDone, est::EstExecutor& executor);
  void timeStep(int64_t stepsDone, est::EstExecutor& executor);
  LayoutCommand nextCommand(int64_t stepsDone, est::EstExecutor& executor);
  std::optional<LayoutCommand> checkPending(int64_t stepsDone, est::EstExecutor& executor);
  std::optional<LayoutCommand> growProgress(int64_t stepsDone, est::EstExecutor& executor);
  void refusePending(control::Outcome outcome, const std::string& why);
  bool dueAt(int64_t stepsDone) const;
  est::StepAction checkpointOrStop(const LayoutCommand& command, int64_t stepsDone, est::EstExecutor& executor);
  void reportRescale(const LayoutCommand& command, int64_t stepsDone, est::EstExecutor& executor,
                     const std::string& from, int fromProcesses, double pause, bool autoMove);
  void updateStatus(int64_t stepsDone, est::EstExecutor& executor);
  void listen();  // lead: the control server
  std::string statusJson() const;
  bool lead() const { return membership_.host && membership_.host->rank() == 0; }

  Membership& membership_;
  CheckpointPolicy& policy_;
  ElasticSettings settings_;
  train::MetricsLog* metrics_;
  AutoPlacer* autoPlacer_ = nullptr;
  std::unique_ptr<control::ControlServer> server_;
  std::unique_ptr<Pending> pending_;  // the request being carried out (lead)
  std::deque<std::unique_ptr<Pending>> queue_;  // the ones after it, in arrival order (lead)
  std::unique_ptr<Grow> grow_;        // processes being started for it (lead)
  int rescales_ = 0;
  int64_t requestsReceived_ = 0;  // control requests taken from the server, ever (status)
  double maxPause_ = 0;
  ChangeSeconds lastChange_;      // the last change's communicators and changeLayout
  double lastBoundary_ = 0;       // the last change's boundary: the step's end to the command received
  // TL_RESCALE_STEP_TIMES (LayoutCommand::timeSteps): this member's first steps on the new layout.
  struct StepTimes {
    bool on = false;
    bool joined = false;      // this process joined at the change
    int64_t changedAt = -1;   // the boundary of the change
    std::chrono::steady_clock::time_point start;
    double cpuStart = 0;
    std::vector<double> wall, cpu;  // per step after the change
    // The executor's split of the same steps (EstExecutor::StepSplit): fibers and loader built,
    // loader waited for, compute, exchanges.
    std::vector<double> startRound, dataWait, compute, exchange;
    int64_t replicaBytes = 0;       // one copy of the replica sent to the joiners (0: none)
  };
  double linkSeconds(int64_t bytes, est::EstExecutor& executor);
  StepTimes stepTimes_;
  bool timeStepsWanted_ = false;  // lead: TL_RESCALE_STEP_TIMES=1
  MemberList members_;            // by rank
  std::function<void(const MemberList&)> membersChanged_;

  mutable std::mutex statusMutex_;
  nlohmann::json status_;
  double lastStepTime_ = 0;
};

}  // namespace tl::elastic
