// --placement auto: plans how many ESTs each process runs from measured speeds, and re-plans
// while the job runs. The moves are in-place placement changes (elastic/rescale/elastic_controller.h), so the
// result is that of DDP mode whatever the plan (docs/design/automatic-placement.md).
//
// Every step boundary, on every member, in the same order (it is part of the job's collective
// sequence): the slowdown of --emulate-slowdown(-at) for the next step is set, and, with auto
// placement, one allgather of each member's measurement (compute seconds per EST in the step
// just done, forward + backward without communication; bytes one more EST holds). The lead
// keeps the measurements of the current layout and, every `window` steps, plans and decides
// (replan_policy.h); its decision travels in the controller's broadcast like a tl-ctl
// placement request.
//
// Threading: the training thread; statusJson() from the control server's thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "est/executor.h"
#include "elastic/placement/auto_placement_options.h"
#include "elastic/placement/replan_policy.h"
#include "runtime/train/metrics.h"

namespace tl::elastic {

class AutoPlacer {
 public:
  AutoPlacer(AutoPlacementOptions options, train::MetricsLog* metrics);

  // Collective over the job's members (with auto placement). On the lead: the placement to
  // move to, when the plan is worth a move; nullopt elsewhere and otherwise. `busy`: the lead
  // is carrying out a tl-ctl request, which goes first (no plan is made).
  std::optional<std::vector<int>> afterStep(int64_t stepsDone, est::EstExecutor& executor, bool busy);
  // The lead moved to the plan at this boundary.
  void moved(int64_t stepsDone);
  // A survivor took over from a lost lead: it logs from now on (its plans start afresh).
  void setMetrics(train::MetricsLog* metrics) { metrics_ = metrics; }

  const AutoPlacementOptions& options() const { return options_; }
  int replans() const { return replans_; }
  // The last plan, for tl-ctl status / plan; "{}" before the first.
  nlohmann::json statusJson() const;
  // What summary.json says about placement and emulation.
  void addToSummary(nlohmann::json& summary) const;

 private:
  AutoPlacementOptions options_;
  train::MetricsLog* metrics_;
  ReplanPolicy policy_;  // lead: the measurements and the decisions
  int replans_ = 0;
  mutable std::mutex mutex_;
  nlohmann::json last_ = nlohmann::json::object();
};

}  // namespace tl::elastic
