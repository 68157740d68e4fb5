// tl-launch's side of resource recording (runtime/usage): which signals a job's processes
// record, the step boundaries that cut metrics.jsonl's usage windows, and the gathering of
// every process's twelve metrics into summary.json.
#pragma once

#include <nlohmann/json.hpp>

#include "est/executor.h"
#include "runtime/job_config.h"
#include "runtime/train/metrics.h"
#include "runtime/usage/usage_recorder.h"

namespace tl::launcher {

usage::UsageOptions usageOptionsFor(const JobConfig& job);

// Marks every step boundary in the recorder (writing the usage windows that close to
// `metrics`, a no-op log off the lead) and then asks `inner`.
class UsageObserver final : public est::StepObserver {
 public:
  UsageObserver(est::StepObserver* inner, usage::UsageRecorder& recorder, train::MetricsLog& metrics)
      : inner_(inner), recorder_(recorder), metrics_(metrics) {}
  est::StepAction afterStep(int64_t stepsDone, est::EstExecutor& executor) override;

 private:
  est::StepObserver* inner_;
  usage::UsageRecorder& recorder_;
  train::MetricsLog& metrics_;
};

// Collective over `host`: every member's twelve metrics, by rank ({"rank", "recorded", the
// twelve keys}). A member without a recorder (one that joined by an in-place grow) passes
// nullptr and is listed with recorded: false.
nlohmann::json gatherUsage(comm::Communicator& host, const usage::UsageRecorder* recorder);

}  // namespace tl::launcher
