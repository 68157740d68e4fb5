// Training metrics: a JSON-lines log (one record per step and per epoch) and the per-epoch
// table printed at the end of every epoch.
#pragma once

#include <algorithm>
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

  // The log a lead that was lost had written (in-place recovery: a survivor takes over its
  // duties). A half-written last line is cut off; from then on a step or eval record of a step,
  // or an epoch record of an epoch, that the file already holds is not written again (the
  // survivors may recompute a step the lost lead had logged: same figures, logged once).
  // InputError if the file cannot be read or written.
  static MetricsLog continuing(const std::string& path);
  // The last step of a step record in the file: written by this log, or there when continued
  // (-1: none).
  int64_t lastStepLogged() const { return std::max(fileSteps_, stepsWritten_); }

  // Every process, lead or not: the last step record it made, whether written or not, so that
  // a survivor taking over from a lost lead can log a step the lead did not ("" before any).
  void noteStep(const nlohmann::json& record);
  const std::string& lastStepRecord() const { return lastStep_; }

 private:
  bool alreadyInFile(const nlohmann::json& record) const;

  std::function<void(nlohmann::json&)> annotateEpoch_;
  std::ofstream out_;
  std::string path_;
  int64_t fileSteps_ = -1, fileEvals_ = -1, fileEpochs_ = -1;  // continued: the file's last of each
  int64_t stepsWritten_ = -1;
  std::string lastStep_;
};

}  // namespace tl::train
