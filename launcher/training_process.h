// One training process of a job, composed once for both kinds of process: one mpirun launched
// (tl_launch_main's runLaunch) and one an in-place grow started (runJoined). It owns the
// step-boundary hooks and spells their order in one place. At every boundary, outermost first:
//
//   1. usage recording marks the step (launcher/usage_recording.h)
//   2. under tl-run, the recovery snapshot (elastic/recovery/recovery_guard.h): before anything
//      that could lose a rank, so that a rank lost while the rest runs costs no completed step
//   3. the checkpoint policy (every K steps, SIGUSR1, --stop-at-step)
//   4. the auto placer's measurements (--placement auto, --emulate-*)
//   5. the controller's broadcast and the layout change it says (elastic/rescale/)
//
// 3 to 5 run inside ElasticController::afterStep, in that order.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "elastic/checkpoint/checkpoint_policy.h"
#include "elastic/placement/auto_placement.h"
#include "elastic/recovery/recovery_guard.h"
#include "elastic/rescale/elastic_controller.h"
#include "elastic/rescale/join_running_job.h"
#include "est/executor.h"
#include "launcher/usage_recording.h"
#include "runtime/train/metrics.h"
#include "runtime/usage/usage_recorder.h"

namespace tl::launcher {

// How the launch ends, on the lead: what the summary and the closing lines say.
struct TrainingEnding {
  bool resumed = false;
  std::string checkpointDir;  // as the user gave it, for "continue with: ... --resume DIR"
};

class TrainingProcess {
 public:
  // `membership` (and, in a joined process, its executor) outlives this. `metrics` is the lead's
  // log (disabled elsewhere); `stopRequested` is SIGUSR1's flag. Recording resource usage, the
  // executor's communicators become the recorder's views (Membership::recorder).
  TrainingProcess(elastic::Membership& membership, usage::UsageRecorder& recorder, train::MetricsLog& metrics,
                  elastic::ElasticSettings settings, const std::atomic<bool>* stopRequested);
  ~TrainingProcess();

  // A launched process: emulated slowdown, the control channel and, under tl-run, the recovery
  // guard (kept in `recovery`, which main's error handlers use). Collective. Returns the exit
  // code every rank should exit with when preparing the guard failed, else 0.
  int startLaunched(est::EstExecutor& executor, std::unique_ptr<elastic::RecoveryGuard>& recovery);
  // A started process: joins the job at its first boundary (collective with the members), then
  // the recovery guard as in startLaunched.
  void startJoined(elastic::JoinedProcess& joined, comm::ParentLink& lead, std::unique_ptr<elastic::RecoveryGuard>& recovery);

  // Trains to the job's end (or this process's leaving), then the summary (lead) and the final
  // barrier. `owned` is released when this process leaves the job early.
  int trainToTheEnd(std::unique_ptr<est::EstExecutor>& owned, const TrainingEnding& ending);
  // What a survivor that takes over from a lost lead runs first: the job's folder locks (the
  // lead's died with it). Unset: the folders stay unlocked, which it says.
  void setOutputsTakeover(std::function<void()> take) { takeOutputs_ = std::move(take); }

 private:
  est::StepObserver& boundaryHooks();
  // After members were lost (or a stopped one was ended): elastic::recoverInPlace, then the
  // controller follows the survivors.
  void recoverInPlace(est::EstExecutor& executor);
  // After an in-place recovery: collective over the survivors. When the lead was lost, rank 0
  // of them takes over its duties (metrics.jsonl, the control channel, summary.json); the lead
  // logs the boundary's step when it has not (it died first, or this lead took that step's
  // state from a survivor ahead of it).
  void afterInPlaceRecovery(est::EstExecutor& executor, int64_t boundary, bool leadLost);
  void takeOverLead(est::EstExecutor& executor, int64_t boundary);
  void followMembers();

  elastic::Membership& membership_;
  usage::UsageRecorder& recorder_;
  train::MetricsLog& metrics_;
  bool lead_;
  elastic::CheckpointPolicy policy_;
  UsageRecording recording_;
  elastic::ElasticController controller_;
  elastic::AutoPlacer placer_;
  elastic::RecoveryGuard* recovery_ = nullptr;
  std::unique_ptr<UsageObserver> usageObserver_;
  std::function<void()> takeOutputs_;
};

// tl-run armed in-place recovery for this process (elastic::kInPlaceEnv=1 in its environment).
bool inPlaceArmed();

// The checkpoint policy of a job with this offer (every member applies the same).
elastic::CheckpointPolicyOptions policyOptions(const elastic::JoinOffer& offer, const std::atomic<bool>* stopRequested);

}  // namespace tl::launcher
