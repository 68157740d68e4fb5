// Surviving a lost rank (tl-run) at no cost while healthy: between two step boundaries only the
// optimizer update changes a process's parameters and optimizer state, and every exchange of a
// step comes before it (est/executor_run.cpp). So the live replica is the job at the last
// boundary this process completed, apart from what a step changes outside the update; of that
// the guard keeps a snapshot per step (the model's buffers, the reducer's state: copies on the
// device; all N EST contexts: one small allgather). When the job is lost around it (mpirun's
// SIGTERM after a rank died, or a collective that timed out on a hung rank) it writes the live
// replica with that snapshot as a candidate checkpoint for tl-run to resume from: boundary k
// when this process had not begun step k+1's update, k+1 when it had (it finishes the update
// first). docs/design/recovery.md.
//
// Threading: the training thread takes snapshots (beforeUpdate) and runs each update under the
// guard's mutex (runUpdate); writeCandidate() may run on any thread (the SIGTERM watcher, or the
// training thread unwinding a timeout), at most once per process, under the same mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dataload/data_identity.h"
#include "elastic/recovery/recovery_files.h"
#include "est/executor.h"
#include "runtime/train/metrics.h"

namespace tl::elastic {
namespace heartbeat {
class MemberHeartbeat;
}

class RecoveryGuard final : public est::StepObserver {
 public:
  // `inner` decides the step (checkpoint policy, in-place rescale). `executor` must outlive the
  // guard, or be let go with leave().
  RecoveryGuard(std::string recoveryDir, est::StepObserver& inner, est::EstExecutor& executor);
  ~RecoveryGuard() override;

  // Collective over the job: who its members are (rank, host, pid: in every candidate, so that
  // tl-run can end a hung rank on its host) and the snapshot of the boundary the job starts at.
  void start(est::EstExecutor& executor);
  // Collective over the job: the snapshot of the boundary the update about to run completes.
  void beforeUpdate(est::EstExecutor& executor) override;
  // The update, under the mutex; the snapshot taken before it becomes the current one.
  void runUpdate(est::EstExecutor& executor, const std::function<void()>& update) override;
  est::StepAction afterStep(int64_t stepsDone, est::EstExecutor& executor) override;

  // Writes the job at this process's last completed boundary as a candidate checkpoint
  // (atomically, then its info file), once; a second call waits for the first. Nothing once
  // the process left the job, holds no snapshot yet (it joined since the last step), or an
  // update failed half-way.
  struct Loss {
    std::string reason;
    bool timedOut = false;          // a collective timed out (a hung or lost member)
    std::vector<int> missingRanks;  // the ranks it named as not joining
  };
  void writeCandidate(const Loss& loss) { writeCandidate(paths_, loss); }

  // Lead: the failures tl-run saw, as `failure`/`recovery` metrics records at the first completed
  // step after a resume, and counts for summary.json and status.
  void setMetrics(train::MetricsLog* metrics) { metrics_ = metrics; }
  // Told counts() whenever they change (lead: tl-ctl status).
  void setStatusSink(std::function<void(const nlohmann::json&)> sink) {
    sink_ = std::move(sink);
    if (sink_) sink_(counts());
  }
  nlohmann::json counts() const;
  int rank() const { return rank_; }  // in the job, as of the last snapshot

  // SIGCONT or SIGTERM (mpirun ending the job after a rank died): a watcher thread writes the
  // candidate and exits the process.
  void watchTermination();
  // The job's members after an in-place rescale changed them (by rank), for the candidates.
  void setMembers(std::vector<elastic::Member> members);
  // This process left the job (in-place shrink), or its executor is going away: from now on a
  // signal just ends it.
  void leave();

  // In-place recovery (tl-run's default, elastic/recovery/in_place.h). Starts a watcher thread
  // that checks the members' processes on this host every 20 ms, and the members on other hosts
  // by heartbeats (member_heartbeat.h); when one is gone it abandons the job's collectives
  // (comm::abandonCollectives) so that the training thread leaves any it waits in and gets
  // comm::MembersLost, without waiting for a timeout. Members on other hosts found silent
  // together are counted after 0.2 s; when they leave this process's side without a quorum
  // (half the members or fewer still heard, and not the lead's half), this host is cut off
  // from a job that goes on elsewhere: the process leaves a held copy (RecoveryPaths::held(),
  // for tl-run to restart from should the other side have ended too), says so and ends.
  void watchMembers();
  struct Losses {
    std::vector<int> ranks;  // as of the member table (sorted)
    std::vector<std::string> hosts;  // hosts every member of which is lost (sorted)
    double firstAt = 0;      // Unix seconds of the first detection (0: none)
    double snapshotAt = 0;   // when this process's last boundary was taken, at that moment
  };
  Losses losses() const;
  // In place, after a collective timed out (the hang timeout) naming `ranks` absent: when every
  // one of them is a stopped process of this host (SIGSTOP, a debugger: a hang, not a slow
  // peer), ends them with SIGKILL, waits until the member watcher has counted them lost (at
  // most 2 s) and returns true, so that the survivors go on in place as after a kill. Otherwise
  // (a rank on another host, one still running, this process) does nothing and
  // returns false: the restart path handles it, as before.
  bool endHungMembers(const std::vector<int>& ranks);
  // Whether the losses of this recovery were hung members that endHungMembers ended.
  bool endedHungMembers() const { return endedHung_.load(); }
  // The job at this process's last completed boundary (a copy on the CPU), and its step.
  est::JobState currentState();
  int64_t currentStep();
  // After the survivors went on in place over `executor`'s new communicator: collective over
  // it. Re-gathers the member table, takes the snapshot of the boundary they resumed at, and
  // keeps `failure` (in memory only: nothing is written to disk) for the lead's `failure` and
  // `recovery` records at the next completed step.
  void resumedInPlace(est::EstExecutor& executor, elastic::FailureRecord failure);

 private:
  void recordRecovery(int64_t stepsDone);
  void writeCandidate(const elastic::RecoveryPaths& where, const Loss& loss);
  // This host is cut off (pollHeartbeats): a held copy, written within a time limit (a host cut
  // off may not reach the shared folder either), then the end of this process.
  [[noreturn]] void endCutOff(const std::string& why, const std::vector<elastic::Member>& silent);
  // The member watcher's round for members on other hosts: those found lost (silent ones
  // once settled and this side keeps its quorum; otherwise it ends this process).
  std::vector<elastic::Member> pollHeartbeats(const std::vector<elastic::Member>& watched);

  elastic::RecoveryPaths paths_;
  est::StepObserver& inner_;
  std::atomic<int> rank_{0};
  std::string host_;
  JobConfig config_;
  std::optional<data::DataIdentity> data_;
  std::mutex mutex_;
  est::EstExecutor* executor_ = nullptr;  // null: no candidate to write
  est::BoundarySnapshot current_;  // the last completed boundary's (with the live replica: the job)
  est::BoundarySnapshot pending_;  // the boundary the running step's update completes
  std::string placement_;
  double stateTime_ = 0;               // Unix seconds when current_ became current
  std::atomic<double> stateTimeSeen_{0};  // the same, for the member watcher (no mutex)
  std::atomic<int64_t> completed_{0};  // the last step whose optimizer step this process finished
  bool written_ = false;
  std::vector<elastic::Member> members_;
  elastic::RecoveryHistory history_;  // from tl-run (no failures when none)
  bool recorded_ = false;
  train::MetricsLog* metrics_ = nullptr;
  std::function<void(const nlohmann::json&)> sink_;
  std::thread watcher_;
  // In place: the members' processes this host watches, and those found gone.
  mutable std::mutex watchMutex_;
  std::vector<elastic::Member> watched_;
  std::vector<elastic::Member> gone_;
  double firstGoneAt_ = 0;
  double goneSnapshotAt_ = 0;
  std::atomic<bool> stopWatching_{false};
  std::atomic<bool> endedHung_{false};
  std::thread memberWatcher_;
  // The member watcher's own (heartbeats to and from members on other hosts).
  std::unique_ptr<heartbeat::MemberHeartbeat> heartbeat_;
  bool heartbeatFailed_ = false;
  std::vector<elastic::Member> heartbeatPeers_;
  std::vector<elastic::Member> silent_;  // found silent, not yet counted (settling)
  double silentSince_ = 0;
};

}  // namespace tl::elastic
