#include "runtime/train/metrics.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/check.h"

namespace tl::train {

nlohmann::json toJson(const EpochSummary& e) {
  nlohmann::json j = {{"type", "epoch"},
                      {"epoch", e.epoch},
                      {"steps", e.steps},
                      {"partial", e.partial},
                      {"data_wait_s", e.dataWaitSeconds},
                      {"compute_s", e.computeSeconds},
                      {"comm_s", e.commSeconds},
                      {"total_s", e.totalSeconds},
                      {"loss", e.meanLoss},
                      {"images_per_s", e.imagesPerSecond}};
  if (e.hasAccuracy) j["train_acc"] = e.trainAccuracy;
  if (e.evaluated) {
    j["test_loss"] = e.testLoss;
    if (e.hasAccuracy) j["test_acc"] = e.testAccuracy;
    if (e.hasPerplexity) j["test_perplexity"] = std::exp(e.testLoss);
  }
  return j;
}

std::string epochTableHeader() {
  return "epoch  steps  data wait s  compute s   comm s  total s  avg loss  train acc  test acc   images/s";
}

std::string epochTableRow(const EpochSummary& e) {
  char testAcc[16];
  char trainAcc[16];
  if (e.evaluated && e.hasAccuracy) std::snprintf(testAcc, sizeof testAcc, "%7.2f%%", 100.0 * e.testAccuracy);
  else std::snprintf(testAcc, sizeof testAcc, "%8s", "-");
  if (e.hasAccuracy) std::snprintf(trainAcc, sizeof trainAcc, "%8.2f%%", 100.0 * e.trainAccuracy);
  else std::snprintf(trainAcc, sizeof trainAcc, "%9s", "-");
  char row[256];
  std::snprintf(row, sizeof row, "%5lld%s %6lld  %11.2f  %9.2f  %7.2f  %7.2f  %8.4f  %s  %s  %9.1f",
                (long long)e.epoch, e.partial ? "*" : " ", (long long)e.steps, e.dataWaitSeconds,
                e.computeSeconds, e.commSeconds, e.totalSeconds, e.meanLoss, trainAcc, testAcc,
                e.imagesPerSecond);
  return row;
}

MetricsLog::MetricsLog(const std::string& path, bool append)
    : out_(path, append ? std::ios::app : std::ios::trunc), path_(path) {
  if (!out_) inputError("cannot write metrics file '", path, "'");
}

void MetricsLog::write(const nlohmann::json& record) {
  if (!out_.is_open()) return;
  if (annotateEpoch_ && record.value("type", "") == "epoch") {
    nlohmann::json annotated = record;
    annotateEpoch_(annotated);
    out_ << annotated.dump() << '\n';
  } else {
    out_ << record.dump() << '\n';
  }
  out_.flush();
  if (!out_) inputError("cannot write metrics file '", path_, "' (disk full?)");
}

}  // namespace tl::train
