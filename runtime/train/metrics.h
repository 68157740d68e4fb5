// Training metrics: a JSON-lines log (one record per step and per epoch) and the per-epoch
// table printed at the end of every epoch.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace tl::train {

struct EpochSummary {
  int64_t epoch = 0;
  int64_t steps = 0;
  bool partial = false;     // the run ended inside this epoch
  double dataWaitSeconds = 0;
  double computeSeconds = 0;
  double commSeconds = 0;
  double totalSeconds = 0;
  double meanLoss = 0;
  double trainAccuracy = 0;
  double imagesPerSecond = 0;
  bool evaluated = false;
  double testLoss = 0;
  double testAccuracy = 0;
  // What the model's output allows: accuracy only where it outputs class scores (not with
  // --model-returns loss); perplexity (exp of the mean loss) where the data are tokens.
  bool hasAccuracy = true;
  bool hasPerplexity = false;
};

nlohmann::json toJson(const EpochSummary& e);

// The epoch table: a header and one row per epoch, fixed-width columns.
std::string epochTableHeader();
std::string epochTableRow(const EpochSummary& e);

// Appends JSON records, one per line, flushed as written. A default-constructed log is a
// no-op (ranks other than 0 hold one).
class MetricsLog {
 public:
  MetricsLog() = default;
  // Truncates the file, or appends to it (a resumed job); InputError if it cannot be opened.
  explicit MetricsLog(const std::string& path, bool append = false);
  void write(const nlohmann::json& record);
  bool enabled() const { return out_.is_open(); }
  // Called on every epoch record before it is written, to add figures the trainer does not
  // know (the dataset cache's hits, misses and bytes read: --cache-mb).
  void annotateEpochs(std::function<void(nlohmann::json&)> annotate) { annotateEpoch_ = std::move(annotate); }

 private:
  std::function<void(nlohmann::json&)> annotateEpoch_;
  std::ofstream out_;
  std::string path_;
};

}  // namespace tl::train
