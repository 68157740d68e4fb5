// tl-predict's evaluation: mean absolute percentage error per metric on held-out models, for
// the analytic model (calibrated on the training runs), the ridge regression, the graph network
// and the mean of the training runs, in one table.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "tools/predict/gnn.h"

namespace tl::predict {

// Reads a dataset written by bench/predict_dataset.sh: one JSON object per line,
// {"shape": {...}, "measured": {the twelve metrics}, "observed": {counts, optional}}. Each
// distinct model and batch is traced once. InputError naming the file and line when a line is malformed.
std::vector<Example> readDataset(const std::string& path, int timedPasses = 3);

struct MetricError {
  double analytic = 0, ridge = 0, gnn = 0, mean = 0;  // MAPE, %
  int samples = 0;                                    // held-out runs with a non-zero measurement
};

// Calibrates the analytic model and fits the ridge regression and the graph network on the runs
// whose model is not in `heldOut`, and scores all four on the others.
std::vector<MetricError> evaluateHeldOut(const std::vector<Example>& runs, const std::set<std::string>& heldOut,
                                         const GnnOptions& gnn = {});

// The table: one row per metric, the four MAPEs, the best, and which predictors beat the mean
// baseline (a NO where one does not).
std::string errorTable(const std::vector<MetricError>& errors);

}  // namespace tl::predict
