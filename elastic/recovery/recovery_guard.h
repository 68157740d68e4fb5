// Surviving a lost rank (tl-run): every process keeps a consistent copy of the whole job at the
// last step boundary it completed — model, optimizer and reducer state (identical everywhere)
// and all N EST contexts (one allgather per step) — and, when the job is lost around it (mpirun's
// SIGTERM after a rank died, or a collective that timed out on a hung rank), writes that copy
// as a candidate checkpoint for tl-run to resume from. docs/design.md ("Surviving a lost rank").
//
// Threading: the training thread takes snapshots (afterStep); writeCandidate() may run on any
// thread (the SIGTERM watcher, or the training thread unwinding a timeout), at most once per
// process; the snapshot is swapped and written under one mutex.
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

namespace tl::launcher {

class RecoveryGuard final : public est::StepObserver {
 public:
  // `inner` decides the step (checkpoint policy, in-place rescale); the guard snapshots after it.
  RecoveryGuard(std::string recoveryDir, est::StepObserver& inner, est::EstExecutor& executor);
  ~RecoveryGuard() override;

  // Collective over the job: who its members are (rank, host, pid: in every candidate, so that
  // tl-run can end a hung rank on its host) and the snapshot of the boundary the job starts at.
  void start(est::EstExecutor& executor);
  // Collective over the job: the state at this step boundary, all N contexts included.
  void snapshot(est::EstExecutor& executor);
  est::StepAction afterStep(int64_t stepsDone, est::EstExecutor& executor) override;

  // Writes this process's snapshot as a candidate checkpoint (atomically, then its info file),
  // once; a second call waits for the first.
  struct Loss {
    std::string reason;
    bool timedOut = false;          // a collective timed out (a hung or lost member)
    std::vector<int> missingRanks;  // the ranks it named as not joining
  };
  void writeCandidate(const Loss& loss);

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
  // This process left the job (in-place shrink): from now on a signal just ends it.
  void leave();

 private:
  void recordRecovery(int64_t stepsDone);

  elastic::RecoveryPaths paths_;
  est::StepObserver& inner_;
  std::atomic<int> rank_{0};
  std::string host_;
  JobConfig config_;
  std::optional<data::DataIdentity> data_;
  std::mutex mutex_;
  est::JobState state_;  // the last boundary's, complete
  std::string placement_;
  double stateTime_ = 0;  // Unix seconds when state_ was taken
  std::atomic<int64_t> completed_{0};  // the last step whose optimizer step this process finished
  bool written_ = false;
  std::vector<elastic::Member> members_;
  elastic::RecoveryHistory history_;  // from tl-run (no failures when none)
  bool recorded_ = false;
  train::MetricsLog* metrics_ = nullptr;
  std::function<void(const nlohmann::json&)> sink_;
  std::thread watcher_;
};

}  // namespace tl::launcher
