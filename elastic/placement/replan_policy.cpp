#include "elastic/placement/replan_policy.h"

#include <algorithm>

#include "common/check.h"
#include "elastic/placement/layout_text.h"
#include "elastic/placement/placement_planner.h"

namespace tl::elastic {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

std::optional<ReplanDecision> ReplanPolicy::measured(const PlacementBoundary& b, StepMeasurement m) {
  if (b.counts != layout_ || m.secondsPerEst.size() != b.counts.size()) {
    // A new layout: its first step pays for the change (a new loader, first use); measure after.
    layout_ = b.counts;
    samples_.clear();
    return std::nullopt;
  }
  samples_.push_back(std::move(m));
  if (int64_t(samples_.size()) % options_.window != 0 || b.busy) return std::nullopt;
  if (b.stepsDone + 1 >= b.totalSteps) return std::nullopt;  // too late to gain anything
  return decide(b);
}

ReplanDecision ReplanPolicy::decide(const PlacementBoundary& b) {
  const std::vector<int>& current = b.counts;
  const size_t p = current.size();
  std::vector<ProcessSpeed> speeds(p);
  const size_t first = samples_.size() - size_t(options_.window);
  for (size_t r = 0; r < p; ++r) {
    std::vector<double> t, m;
    for (size_t i = first; i < samples_.size(); ++i) {
      t.push_back(samples_[i].secondsPerEst[r]);
      m.push_back(samples_[i].bytesPerEst[r]);
    }
    speeds[r].secondsPerEst = median(t);
    speeds[r].bytesPerEst = *std::max_element(m.begin(), m.end());
    speeds[r].memoryLimitBytes = options_.memoryLimitBytes(int(r));
  }
  ReplanDecision d;
  nlohmann::json& record = d.record;
  record = {{"type", "plan"}, {"step", b.stepsDone}, {"placement", joinInts(current)}, {"window_steps", options_.window}};
  std::vector<double> t, m, limit;
  for (const auto& s : speeds) {
    t.push_back(s.secondsPerEst);
    m.push_back(s.bytesPerEst);
    limit.push_back(s.memoryLimitBytes / 1e6);
  }
  record["seconds_per_est"] = t;
  record["bytes_per_est"] = m;
  record["memory_limit_mb"] = limit;
  std::string decision;
  if (std::any_of(t.begin(), t.end(), [](double x) { return !(x > 0); })) {
    decision = "keep: a process has no measurement (it holds no EST)";
  } else {
    try {
      const PlacementPlan plan = planPlacement(speeds, b.logicalWorkers, 1, current, options_.minGain / 4);
      const double now = predictedStepSeconds(current, speeds);
      const double gain = now / plan.stepSeconds - 1;
      record["plan"] = joinInts(plan.counts);
      record["predicted_step_s"] = now;
      record["planned_step_s"] = plan.stepSeconds;
      record["ideal_step_s"] = plan.idealStepSeconds;
      record["predicted_gain"] = gain;
      if (plan.counts == current) {
        decision = "keep: the placement is the plan";
      } else if (gain < options_.minGain) {
        decision = str("keep: predicted gain ", int(gain * 1000) / 10.0, " % is below --replan-min-gain ",
                       options_.minGain * 100, " %");
      } else if (lastMove_ >= 0 && b.stepsDone - lastMove_ < options_.holdSteps) {
        decision = str("hold: the last move was at step ", lastMove_, ", --replan-hold ", options_.holdSteps);
      } else if (pending_ != plan.counts) {
        // One window can be a transient (the machine busy elsewhere): a move waits until the
        // next window plans the same.
        decision = "confirm: the next window must plan the same before ESTs move";
        pending_ = plan.counts;
      } else {
        decision = "move";
        d.move = plan.counts;
      }
    } catch (const InputError& e) {
      decision = str("keep: ", e.what());
    }
  }
  if (decision.rfind("confirm", 0) != 0) pending_.clear();
  record["decision"] = decision;
  return d;
}

}  // namespace tl::elastic
