// summary.json: what a finished run reports.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "runtime/job_config.h"
#include "runtime/train/trainer_result.h"

namespace tl::train {

struct RunInfo {
  int processes = 1;
  int logicalWorkers = 1;
  std::string placement;  // e.g. "2,1,1"
};

nlohmann::json summaryJson(const TrainResult& result, const JobConfig& config, const RunInfo& info);

// Writes `summary` to <dir>/summary.json atomically.
void writeSummary(const nlohmann::json& summary, const std::string& dir);

}  // namespace tl::train
