// tl-predict's evaluation: mean absolute percentage error per metric on held-out models, for
// the analytic model, the learned model and the mean of the training runs, in one table.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "launcher/predict/learned.h"

namespace tl::predict {

// Reads a dataset written by bench/predict_dataset.sh: one JSON object per line,
// {"shape": {...}, "measured": {the twelve metrics}}. Each distinct model and batch is traced
// once. InputError naming the file and line when a line is malformed.
std::vector<Example> readDataset(const std::string& path, int timedPasses = 3);

struct MetricError {
  double analytic = 0, learned = 0, mean = 0;  // MAPE, %
  int samples = 0;                             // held-out runs with a non-zero measurement
};

// Fits on the runs whose model is not in `heldOut` and scores on the others.
std::vector<MetricError> evaluateHeldOut(const std::vector<Example>& runs, const std::set<std::string>& heldOut);

// The table: one row per metric, the three MAPEs, the best, and whether the learned and the
// analytic model beat the mean baseline.
std::string errorTable(const std::vector<MetricError>& errors);

}  // namespace tl::predict
