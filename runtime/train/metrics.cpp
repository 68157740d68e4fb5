#include "runtime/train/metrics.h"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>

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

MetricsLog MetricsLog::continuing(const std::string& path) {
  int64_t steps = -1, evals = -1, epochs = -1;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in && std::filesystem::exists(path)) inputError("cannot read metrics file '", path, "'");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t whole = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if (whole < text.size()) {  // the lost writer's half-written last line
      std::error_code ec;
      std::filesystem::resize_file(path, whole, ec);
      if (ec) inputError("cannot cut the half-written last line of metrics file '", path, "': ", ec.message());
      text.resize(whole);
    }
    size_t start = 0;
    for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
      const auto r = nlohmann::json::parse(text.begin() + long(start), text.begin() + long(end), nullptr, false);
      if (!r.is_object()) continue;
      const std::string type = r.value("type", "");
      if (type == "step") steps = std::max(steps, r.value("step", int64_t(-1)));
      if (type == "eval") evals = std::max(evals, r.value("step", int64_t(-1)));
      if (type == "epoch") epochs = std::max(epochs, r.value("epoch", int64_t(-1)));
    }
  }
  MetricsLog log(path, /*append=*/true);
  log.fileSteps_ = steps;
  log.fileEvals_ = evals;
  log.fileEpochs_ = epochs;
  return log;
}

bool MetricsLog::alreadyInFile(const nlohmann::json& record) const {
  const std::string type = record.value("type", "");
  if (type == "step") return record.value("step", int64_t(-1)) <= fileSteps_;
  if (type == "eval") return record.value("step", int64_t(-1)) <= fileEvals_;
  if (type == "epoch") return record.value("epoch", int64_t(-1)) <= fileEpochs_;
  return false;
}

void MetricsLog::noteStep(const nlohmann::json& record) { lastStep_ = record.dump(); }

void MetricsLog::write(const nlohmann::json& record) {
  if (!out_.is_open() || alreadyInFile(record)) return;
  if (record.value("type", "") == "step") stepsWritten_ = std::max(stepsWritten_, record.value("step", int64_t(-1)));
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
