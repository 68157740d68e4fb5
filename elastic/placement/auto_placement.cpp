#include "elastic/placement/auto_placement.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "common/check.h"
#include "elastic/placement/placement_planner.h"
#include "elastic/placement/layout_text.h"
#include "runtime/comm/json_collectives.h"

namespace tl::elastic {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

AutoPlacer::AutoPlacer(AutoPlacementOptions options, train::MetricsLog* metrics)
    : options_(std::move(options)), metrics_(metrics) {}

std::optional<std::vector<int>> AutoPlacer::afterStep(int64_t stepsDone, est::EstExecutor& executor, bool busy) {
  comm::Communicator& host = executor.comm();
  const double factor = options_.slowdownFor(host.rank(), stepsDone);
  executor.setEmulatedSlowdown(factor);
  if (!options_.enabled) return std::nullopt;
  const nlohmann::json mine = {executor.lastComputePerEst(), executor.bytesPerEst()};
  const auto all = comm::allgatherJson(host, mine);
  if (host.rank() != 0) return std::nullopt;
  const std::string layout = executor.placement().toString();
  if (layout != layout_ || executor.placement().processes() != int(all.size())) {
    // A new layout: its first step pays for the change (a new loader, first use); measure after.
    layout_ = layout;
    layoutSince_ = stepsDone;
    samples_.clear();
    return std::nullopt;
  }
  Sample s;
  for (const nlohmann::json& measured : all) {
    s.secondsPerEst.push_back(measured.at(0).get<double>());
    s.bytesPerEst.push_back(measured.at(1).get<double>());
  }
  samples_.push_back(std::move(s));
  if (int64_t(samples_.size()) % options_.window != 0 || busy) return std::nullopt;
  if (stepsDone + 1 >= executor.plan().totalSteps) return std::nullopt;  // too late to gain anything
  return decide(stepsDone, executor);
}

void AutoPlacer::moved(int64_t stepsDone) {
  lastMove_ = stepsDone;
  ++replans_;
}

std::optional<std::vector<int>> AutoPlacer::decide(int64_t stepsDone, est::EstExecutor& executor) {
  const int p = executor.placement().processes();
  const std::vector<int> current = countsOf(executor.placement());
  std::vector<est::ProcessSpeed> speeds(static_cast<size_t>(p));
  const size_t first = samples_.size() - size_t(options_.window);
  for (int r = 0; r < p; ++r) {
    std::vector<double> t, m;
    for (size_t i = first; i < samples_.size(); ++i) {
      t.push_back(samples_[i].secondsPerEst[size_t(r)]);
      m.push_back(samples_[i].bytesPerEst[size_t(r)]);
    }
    speeds[size_t(r)].secondsPerEst = median(t);
    speeds[size_t(r)].bytesPerEst = *std::max_element(m.begin(), m.end());
    speeds[size_t(r)].memoryLimitBytes = options_.memoryLimitBytes(r);
  }
  nlohmann::json record{{"type", "plan"},
                        {"step", stepsDone},
                        {"placement", joinInts(current)},
                        {"window_steps", options_.window},
                        {"time", nowSeconds()}};
  std::vector<double> t, m, limit;
  for (const auto& s : speeds) {
    t.push_back(s.secondsPerEst);
    m.push_back(s.bytesPerEst);
    limit.push_back(s.memoryLimitBytes / 1e6);
  }
  record["seconds_per_est"] = t;
  record["bytes_per_est"] = m;
  record["memory_limit_mb"] = limit;
  std::optional<std::vector<int>> target;
  std::string decision;
  if (std::any_of(t.begin(), t.end(), [](double x) { return !(x > 0); })) {
    decision = "keep: a process has no measurement (it holds no EST)";
  } else {
    try {
      const est::PlacementPlan plan = est::planPlacement(speeds, executor.placement().logicalWorkers(), 1, current, options_.minGain / 4);
      const double now = est::predictedStepSeconds(current, speeds);
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
      } else if (lastMove_ >= 0 && stepsDone - lastMove_ < options_.holdSteps) {
        decision = str("hold: the last move was at step ", lastMove_, ", --replan-hold ", options_.holdSteps);
      } else if (pending_ != plan.counts) {
        // One window can be a transient (the machine busy elsewhere): a move waits until the
        // next window plans the same.
        decision = "confirm: the next window must plan the same before ESTs move";
        pending_ = plan.counts;
      } else {
        decision = "move";
        target = plan.counts;
      }
    } catch (const InputError& e) {
      decision = str("keep: ", e.what());
    }
  }
  if (decision.rfind("confirm", 0) != 0) pending_.clear();
  record["decision"] = decision;
  std::string seconds;
  for (double x : t) seconds += str(seconds.empty() ? "" : " ", int(x * 1e5) / 100.0);
  spdlog::info("placement auto after step {}: {} at [{}] ms per EST -> plan {}: {}", stepsDone, joinInts(current),
               seconds, record.value("plan", std::string("-")), decision);
  if (metrics_ && metrics_->enabled()) metrics_->write(record);
  std::lock_guard<std::mutex> lock(mutex_);
  last_ = record;
  last_["replans"] = replans_ + (target ? 1 : 0);
  return target;
}

nlohmann::json AutoPlacer::statusJson() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

void AutoPlacer::addToSummary(nlohmann::json& summary) const {
  summary["placement_auto"] = options_.enabled;
  if (options_.enabled) summary["placement_replans"] = replans_;
  summary["emulated"] = options_.emulated();
  if (options_.emulated()) summary["emulation"] = toJson(options_);
}

}  // namespace tl::elastic
