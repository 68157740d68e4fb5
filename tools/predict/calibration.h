// The analytic model's machine constants (analytic.h Calibration), measured from recorded runs:
// each one is the median over the runs of the same quantity solved from one run's counts, so
// one disturbed run does not move it. Formulas: docs/design/resource-usage.md ("The analytic model").
#pragma once

#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tools/predict/learned.h"

namespace tl::predict {

// Runs without RunCounts are skipped; a constant no run can measure keeps its default.
Calibration calibrate(const std::vector<Example>& runs);

nlohmann::json toJson(const Calibration& c);
Calibration calibrationFromJson(const nlohmann::json& j);  // InputError when malformed

}  // namespace tl::predict
