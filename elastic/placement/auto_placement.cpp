#include "elastic/placement/auto_placement.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/check.h"
#include "elastic/placement/layout_text.h"
#include "elastic/placement/replan_policy.h"
#include "runtime/comm/json_collectives.h"

namespace tl::elastic {
namespace {

// Two doubles per member every step: 19 bytes of CBOR.
const comm::JsonCollectiveOptions kMeasurementCollective{64, {}};

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

AutoPlacer::AutoPlacer(AutoPlacementOptions options, train::MetricsLog* metrics)
    : options_(options), metrics_(metrics), policy_(std::move(options)) {}

std::optional<std::vector<int>> AutoPlacer::afterStep(int64_t stepsDone, est::EstExecutor& executor, bool busy) {
  comm::Communicator& host = executor.comm();
  const double factor = options_.slowdownFor(host.rank(), stepsDone);
  executor.setEmulatedSlowdown(factor);
  if (!options_.enabled) return std::nullopt;
  const nlohmann::json mine = {executor.lastComputePerEst(), executor.bytesPerEst()};
  const auto all = comm::allgatherJson(host, mine, kMeasurementCollective);
  if (host.rank() != 0) return std::nullopt;
  StepMeasurement measurement;
  for (const nlohmann::json& measured : all) {
    measurement.secondsPerEst.push_back(measured.at(0).get<double>());
    measurement.bytesPerEst.push_back(measured.at(1).get<double>());
  }
  const PlacementBoundary boundary{stepsDone, countsOf(executor.placement()), executor.placement().logicalWorkers(),
                                   executor.plan().totalSteps, busy};
  std::optional<ReplanDecision> decision = policy_.measured(boundary, std::move(measurement));
  if (!decision) return std::nullopt;
  nlohmann::json& record = decision->record;
  record["time"] = nowSeconds();
  std::string seconds;
  for (double x : record["seconds_per_est"]) seconds += str(seconds.empty() ? "" : " ", int(x * 1e5) / 100.0);
  spdlog::info("placement auto after step {}: {} at [{}] ms per EST -> plan {}: {}", stepsDone,
               record["placement"].get<std::string>(), seconds, record.value("plan", std::string("-")),
               record["decision"].get<std::string>());
  if (metrics_ && metrics_->enabled()) metrics_->write(record);
  std::lock_guard<std::mutex> lock(mutex_);
  last_ = record;
  last_["replans"] = replans_ + (decision->move ? 1 : 0);
  return decision->move;
}

void AutoPlacer::moved(int64_t stepsDone) {
  policy_.moved(stepsDone);
  ++replans_;
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
