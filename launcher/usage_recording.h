// tl-launch's side of resource recording (runtime/usage): which signals a job's processes
// record, the step boundaries that cut the usage windows, the communicators a rescale gives the
// executor (counted like the ones it started with), and how the figures of every process that
// took part — with the job from the start, started by an in-place grow, or gone at a shrink —
// reach summary.json ("usage_processes") and metrics.jsonl (usage windows tagged by process).
// docs/design/resource-usage.md has the rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "est/executor.h"
#include "elastic/rescale/membership_recorder.h"
#include "runtime/job_config.h"
#include "runtime/train/metrics.h"
#include "runtime/usage/usage_recorder.h"

namespace tl::launcher {

usage::UsageOptions usageOptionsFor(const JobConfig& job);

// One process's recording as the job's outputs show it. Every tl-launch process has one.
// The lead (rank 0, never leaves) writes its own windows to metrics.jsonl as they close; the
// others keep theirs and hand them over when they leave (beforeLeave) or at the end (gather).
//
// Threading: the training thread only.
class UsageRecording final : public elastic::MembershipRecorder {
 public:
  // `metrics`: the lead's log (a no-op log elsewhere); both outlive this.
  UsageRecording(usage::UsageRecorder& recorder, train::MetricsLog& metrics, bool startedByGrow);

  usage::UsageRecorder& recorder() { return recorder_; }
  // A process started by a grow: it joined the job at this step boundary and records from here.
  void joinedAt(int64_t stepsDone);
  // At every step boundary (rank: this process's rank in the job now).
  void markStep(int64_t stepsDone, int rank);

  // MembershipRecorder: the executor's communicators count into this process's recorder.
  std::unique_ptr<comm::Communicator> view(comm::Communicator& raw) override;
  void beforeLeave(comm::Communicator& host, const std::vector<int>& leave, int64_t stepsDone) override;

  // Collective over `host` (the members at the end): every process's entry, by rank, followed
  // on the lead by those of the processes that left during the run; the lead writes the
  // windows the others kept to metrics.jsonl.
  nlohmann::json gather(comm::Communicator& host);

 private:
  // {"rank", "host", "pid", "started_by_grow", "joined_at_step", "left_at_step", "recorded",
  //  the twelve, steps and bytes} plus "windows" (the ones not written yet).
  nlohmann::json report(int rank, std::optional<int64_t> leftAtStep) const;
  // Lead: writes a report's windows to metrics.jsonl and returns the report without them.
  nlohmann::json publish(nlohmann::json report);

  usage::UsageRecorder& recorder_;
  train::MetricsLog& metrics_;
  std::string host_;
  int64_t pid_ = 0;
  bool startedByGrow_ = false;
  std::optional<int64_t> joinedAtStep_;
  std::vector<nlohmann::json> windows_;  // not the lead's: kept until handed over
  std::vector<nlohmann::json> departed_;  // lead: the entries of processes that left
};

// Marks every step boundary in the recording and then asks `inner`.
class UsageObserver final : public est::StepObserver {
 public:
  UsageObserver(est::StepObserver* inner, UsageRecording& recording) : inner_(inner), recording_(recording) {}
  est::StepAction afterStep(int64_t stepsDone, est::EstExecutor& executor) override;
  void beforeUpdate(est::EstExecutor& executor) override {
    if (inner_) inner_->beforeUpdate(executor);
  }
  void runUpdate(est::EstExecutor& executor, const std::function<void()>& update) override {
    if (inner_) {
      inner_->runUpdate(executor, update);
    } else {
      update();
    }
  }

 private:
  est::StepObserver* inner_;
  UsageRecording& recording_;
};

}  // namespace tl::launcher
