// --placement auto and the speed emulation flags: what a launch asks of the automatic EST
// placement (elastic/placement/auto_placement.h). Run settings only: none of them changes a bit.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace tl::elastic {

struct AutoPlacementOptions {
  bool enabled = false;          // --placement auto
  int64_t window = 5;            // --replan-window: steps measured per decision
  double minGain = 0.10;         // --replan-min-gain: predicted step-time gain a move needs
  int64_t holdSteps = 20;        // --replan-hold: steps after a move before the next one
  // --emulate-slowdown F,F,..: per process (by rank), each EST's compute is stretched F times.
  std::vector<double> slowdown;
  // --emulate-slowdown-at STEP:F,F,..: the factors from the step after STEP on.
  int64_t slowdownAtStep = 0;
  std::vector<double> slowdownAt;
  // --emulate-device-memory MB[,MB..]: memory the planner may give ESTs, per process (one
  // value: every process).
  std::vector<double> deviceMemoryMb;

  bool emulated() const { return !slowdown.empty() || !slowdownAt.empty() || !deviceMemoryMb.empty(); }
  // The slowdown of the process at `rank` for the step after `stepsDone`; ranks beyond the
  // list (processes an in-place grow started) take the last factor, none given: 1.
  double slowdownFor(int rank, int64_t stepsDone) const;
  // The planner's memory limit for `rank` in bytes; 0: none.
  double memoryLimitBytes(int rank) const;
  // InputError naming the flag when a per-process list does not match `processes`.
  void checkProcesses(int processes) const;
};

nlohmann::json toJson(const AutoPlacementOptions& o);
AutoPlacementOptions autoPlacementFromJson(const nlohmann::json& j);

}  // namespace tl::elastic
