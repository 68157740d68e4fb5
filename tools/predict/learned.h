// The ridge regression of tl-predict: per metric, a ridge regression of log(metric) on totals
// of the model's layer graph (size, activation peak, measured pass time, layer counts by kind)
// and of the job (batch, N, traffic), plus the analytic prediction of the same metric. The
// graph network (gnn.h) reads the graph itself; the evaluation table (bench/predict_eval.sh)
// scores both.
#pragma once

#include <array>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tools/predict/analytic.h"

namespace tl::predict {

// Counts a recorded run keeps beside its metrics (summary.json "usage"): what the analytic
// calibration reads.
struct RunCounts {
  bool recorded = false;
  double computeBursts = 0, txBursts = 0;
  double spanSeconds = 0, steps = 0;  // the steady state: first to last step boundary
  double txBytesPerStep = 0;
};

// One recorded run: what it was and what it consumed.
struct Example {
  JobShape shape;
  ModelTrace trace;
  usage::TwelveMetrics measured{};
  RunCounts observed;
};

// "cnn", "mlp", "resnet-20": what evaluation holds out.
std::string modelKey(const models::ModelConfig& model);

std::vector<double> features(const JobShape& shape, const ModelTrace& trace, size_t metric);
std::vector<std::string> featureNames();

class LearnedPredictor {
 public:
  static LearnedPredictor fit(const std::vector<Example>& examples, double lambda = 1.0);
  usage::TwelveMetrics predict(const JobShape& shape, const ModelTrace& trace) const;

  nlohmann::json toJson() const;
  static LearnedPredictor fromJson(const nlohmann::json& j);  // InputError when malformed

 private:
  struct Linear {
    std::vector<double> mean, scale, weights;  // weights[0]: intercept
  };
  std::array<Linear, 12> metrics_;
  double lambda_ = 1.0;
};

// The floor added before taking logs, per metric (seconds, utilisation, MB, MB/s).
double logFloor(size_t metric);

}  // namespace tl::predict
