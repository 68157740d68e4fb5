// The lead's side of --placement auto without the collective (auto_placement.h gathers the
// measurements): it keeps the measurements taken on the current layout and, every `window`
// steps, plans and decides whether the plan is worth a move. The hysteresis: a move needs a
// predicted gain of at least --replan-min-gain, must wait --replan-hold steps after the last
// one, and must be planned by two windows in a row (one can be a transient). Torch-free, so the
// rules are tested on scripted measurements (tests/elastic/test_replan_policy.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "elastic/placement/auto_placement_options.h"

namespace tl::elastic {

// One step's measurements, by rank: compute seconds per EST, bytes one more EST holds.
struct StepMeasurement {
  std::vector<double> secondsPerEst;
  std::vector<double> bytesPerEst;
};

// The job at a step boundary.
struct PlacementBoundary {
  int64_t stepsDone = 0;
  std::vector<int> counts;  // ESTs per member now
  int logicalWorkers = 0;
  int64_t totalSteps = 0;
  bool busy = false;  // a tl-ctl request is being carried out; it goes first
};

struct ReplanDecision {
  nlohmann::json record;                 // the "plan" metrics record: speeds, plan, gain, decision
  std::optional<std::vector<int>> move;  // the placement to move to, when the decision is "move"
};

class ReplanPolicy {
 public:
  explicit ReplanPolicy(AutoPlacementOptions options) : options_(std::move(options)) {}

  // The measurements of the step just done. A decision when a window closed on this layout.
  std::optional<ReplanDecision> measured(const PlacementBoundary& boundary, StepMeasurement measurement);
  // The job moved at this boundary.
  void moved(int64_t stepsDone) { lastMove_ = stepsDone; }

 private:
  ReplanDecision decide(const PlacementBoundary& boundary);

  AutoPlacementOptions options_;
  std::vector<int> layout_;                // the placement the samples were measured on
  std::vector<StepMeasurement> samples_;   // measurements on `layout_`
  int64_t lastMove_ = -1;                  // the boundary of the last move (-1: none)
  std::vector<int> pending_;               // the plan of the last window, when it asked for a move
};

}  // namespace tl::elastic
