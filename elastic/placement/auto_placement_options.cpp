#include "elastic/placement/auto_placement_options.h"

#include "common/check.h"

namespace tl::elastic {

double AutoPlacementOptions::slowdownFor(int rank, int64_t stepsDone) const {
  const std::vector<double>& f = !slowdownAt.empty() && stepsDone >= slowdownAtStep ? slowdownAt : slowdown;
  // Ranks beyond the list (processes an in-place grow started) take the last factor.
  if (f.empty() || rank < 0) return 1.0;
  return size_t(rank) < f.size() ? f[size_t(rank)] : f.back();
}

double AutoPlacementOptions::memoryLimitBytes(int rank) const {
  if (deviceMemoryMb.empty()) return 0;
  const double mb = deviceMemoryMb.size() == 1 ? deviceMemoryMb[0]
                    : size_t(rank) < deviceMemoryMb.size() ? deviceMemoryMb[size_t(rank)] : 0;
  return mb * 1e6;
}

void AutoPlacementOptions::checkProcesses(int processes) const {
  if (!slowdown.empty() && int(slowdown.size()) != processes)
    inputError("--emulate-slowdown: ", slowdown.size(), " factor(s) for ", processes, " processes");
  if (!slowdownAt.empty() && int(slowdownAt.size()) != processes)
    inputError("--emulate-slowdown-at: ", slowdownAt.size(), " factor(s) for ", processes, " processes");
  if (deviceMemoryMb.size() > 1 && int(deviceMemoryMb.size()) != processes)
    inputError("--emulate-device-memory: ", deviceMemoryMb.size(), " values for ", processes,
               " processes (give one for all, or one per process)");
}

nlohmann::json toJson(const AutoPlacementOptions& o) {
  return {{"enabled", o.enabled},           {"window", o.window},         {"min_gain", o.minGain},
          {"hold_steps", o.holdSteps},      {"slowdown", o.slowdown},     {"slowdown_at_step", o.slowdownAtStep},
          {"slowdown_at", o.slowdownAt},    {"device_memory_mb", o.deviceMemoryMb}};
}

AutoPlacementOptions autoPlacementFromJson(const nlohmann::json& j) {
  AutoPlacementOptions o;
  o.enabled = j.at("enabled").get<bool>();
  o.window = j.at("window").get<int64_t>();
  o.minGain = j.at("min_gain").get<double>();
  o.holdSteps = j.at("hold_steps").get<int64_t>();
  o.slowdown = j.at("slowdown").get<std::vector<double>>();
  o.slowdownAtStep = j.at("slowdown_at_step").get<int64_t>();
  o.slowdownAt = j.at("slowdown_at").get<std::vector<double>>();
  o.deviceMemoryMb = j.at("device_memory_mb").get<std::vector<double>>();
  return o;
}

}  // namespace tl::elastic
