#include "runtime/train/summary.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/version.h"

namespace tl::train {

nlohmann::json summaryJson(const TrainResult& r, const JobConfig& config, const RunInfo& info) {
  nlohmann::json j;
  j["tl_version"] = tlVersion();  // which tl trained it: results are compared across releases
  j["tl_git_commit"] = tlGitCommit();
  j["steps"] = r.steps;
  j["steps_this_run"] = r.stepsThisRun;
  j["epochs_completed"] = r.epochsCompleted;
  j["final_loss"] = r.finalLoss;
  if (r.hasAccuracy) j["train_acc"] = r.trainAccuracy;  // a model that returns its loss has none
  if (r.evaluated) {
    if (r.hasAccuracy) j["test_acc"] = r.testAccuracy;
    j["test_loss"] = r.testLoss;
    if (r.hasPerplexity) j["test_perplexity"] = std::exp(r.testLoss);
  } else if (r.hasAccuracy) {
    j["test_acc"] = nullptr;
  }
  j["images_per_s"] = r.imagesPerSecond;
  j["wall_time_s"] = r.wallSeconds;
  j["params_sha256"] = r.paramsSha256;
  if (r.hasBest) j["best"] = {{"step", r.bestStep}, {"val_loss", r.bestValLoss}};  // --keep-best
  j["processes"] = info.processes;
  j["logical_workers"] = info.logicalWorkers;
  j["placement"] = info.placement;
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : r.epochs) epochs.push_back(toJson(e));
  j["epochs"] = epochs;
  j["compute_s"] = r.computeSeconds;
  j["data_wait_s"] = r.dataWaitSeconds;
  j["loader"] = {{"workers", r.loaderWorkers},
                 {"busy_s", r.loaderBusySeconds},
                 {"images", r.loaderImages},
                 {"resizes", r.loaderResizes},
                 {"auto", config.autoWorkers}};
  j["replays"] = r.replays;
  j["device"] = config.device.toString();
  j["simulated_device"] = r.simulatedDevice;
  if (r.simulatedDevice) {
    j["note"] = "simulated device: batches were loaded and consumed by waiting; no training step ran";
  }
  j["config"] = toJson(config);
  return j;
}

void writeSummary(const nlohmann::json& summary, const std::string& dir) {
  writeFileAtomic(joinPath(dir, "summary.json"), summary.dump(2) + "\n");
}

}  // namespace tl::train
