#include "runtime/train/metrics.h"

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
                      {"train_acc", e.trainAccuracy},
                      {"images_per_s", e.imagesPerSecond}};
  if (e.evaluated) {
    j["test_loss"] = e.testLoss;
    j["test_acc"] = e.testAccuracy;
  }
  return j;
}

std::string epochTableHeader() {
  return "epoch  steps  data wait s  compute s   comm s  total s  avg loss  train acc  test acc   images/s";
}

std::string epochTableRow(const EpochSummary& e) {
  char testAcc[16];
  if (e.evaluated) std::snprintf(testAcc, sizeof testAcc, "%7.2f%%", 100.0 * e.testAccuracy);
  else std::snprintf(testAcc, sizeof testAcc, "%8s", "-");
  char row[256];
  std::snprintf(row, sizeof row, "%5lld%s %6lld  %11.2f  %9.2f  %7.2f  %7.2f  %8.4f  %8.2f%%  %s  %9.1f",
                (long long)e.epoch, e.partial ? "*" : " ", (long long)e.steps, e.dataWaitSeconds,
                e.computeSeconds, e.commSeconds, e.totalSeconds, e.meanLoss,
                100.0 * e.trainAccuracy, testAcc, e.imagesPerSecond);
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
