#include "tools/predict/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "tools/predict/calibration.h"

namespace tl::predict {

std::vector<Example> readDataset(const std::string& path, int timedPasses) {
  std::ifstream in(path);
  TL_REQUIRE(in, "dataset '", path, "': cannot be read");
  std::map<std::string, ModelTrace> traces;
  std::vector<Example> out;
  int lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    if (line.empty()) continue;
    Example e;
    try {
      const auto j = nlohmann::json::parse(line);
      e.shape = jobShapeFromJson(j.at("shape"));
      for (size_t m = 0; m < 12; ++m) e.measured[m] = j.at("measured").at(usage::kMetricNames[m]).get<double>();
      if (j.contains("observed")) {
        const auto& o = j.at("observed");
        e.observed.recorded = true;
        e.observed.computeBursts = o.at("compute_bursts").get<double>();
        e.observed.txBursts = o.at("tx_bursts").get<double>();
        e.observed.spanSeconds = o.at("span_s").get<double>();
        e.observed.steps = o.at("last_step").get<double>() - o.at("first_step").get<double>();
        e.observed.txBytesPerStep = o.at("tx_bytes_per_step").get<double>();
      }
    } catch (const std::exception& ex) {
      inputError("dataset '", path, "' line ", lineNo, ": ", ex.what());
    }
    const std::string key = modelKey(e.shape.model) + (e.shape.model.batchNorm ? "" : "-nobn") + "/" +
                            std::to_string(e.shape.batch) + "/" + std::to_string(e.shape.computeThreads);
    auto it = traces.find(key);
    if (it == traces.end()) {
      it = traces.emplace(key, traceModel(e.shape.model, e.shape.batch, e.shape.computeThreads, timedPasses)).first;
    }
    e.trace = it->second;
    out.push_back(e);
  }
  TL_REQUIRE(!out.empty(), "dataset '", path, "': no runs");
  return out;
}

std::vector<MetricError> evaluateHeldOut(const std::vector<Example>& runs, const std::set<std::string>& heldOut,
                                         const GnnOptions& gnnOptions) {
  std::vector<Example> train, test;
  for (const Example& e : runs) (heldOut.count(modelKey(e.shape.model)) ? test : train).push_back(e);
  TL_REQUIRE(!test.empty(), "evaluation: no run of the held-out models in the dataset");
  TL_REQUIRE(train.size() >= 2, "evaluation: fewer than 2 runs left to fit on");
  const Calibration calibration = calibrate(train);
  const LearnedPredictor ridge = LearnedPredictor::fit(train);
  const GnnPredictor gnn = GnnPredictor::fit(train, gnnOptions);
  std::vector<MetricError> errors(12);
  std::vector<usage::TwelveMetrics> analytic, ridged, graphed;
  for (const Example& e : test) {
    analytic.push_back(analyticPrediction(e.shape, e.trace, calibration));
    ridged.push_back(ridge.predict(e.shape, e.trace));
    graphed.push_back(gnn.predict(e.shape, e.trace));
  }
  for (size_t m = 0; m < 12; ++m) {
    double mean = 0;
    for (const Example& e : train) mean += e.measured[m];
    mean /= double(train.size());
    for (size_t i = 0; i < test.size(); ++i) {
      const double actual = test[i].measured[m];
      if (actual == 0) continue;  // a percentage of nothing: left out (counted in `samples`)
      errors[m].analytic += std::fabs(analytic[i][m] - actual) / actual;
      errors[m].ridge += std::fabs(ridged[i][m] - actual) / actual;
      errors[m].gnn += std::fabs(graphed[i][m] - actual) / actual;
      errors[m].mean += std::fabs(mean - actual) / actual;
      ++errors[m].samples;
    }
    if (errors[m].samples > 0) {
      const double scale = 100.0 / double(errors[m].samples);
      errors[m].analytic *= scale;
      errors[m].ridge *= scale;
      errors[m].gnn *= scale;
      errors[m].mean *= scale;
    }
  }
  return errors;
}

std::string errorTable(const std::vector<MetricError>& errors) {
  std::string out;
  char row[320];
  std::snprintf(row, sizeof row, "%-19s %4s %10s %9s %9s %9s  %-8s %s\n", "metric", "runs", "analytic %", "ridge %",
                "gnn %", "mean %", "best", "beats the mean baseline?");
  out += row;
  for (size_t m = 0; m < errors.size(); ++m) {
    const MetricError& e = errors[m];
    if (e.samples == 0) {
      std::snprintf(row, sizeof row, "%-19s %4d %10s %9s %9s %9s  %-8s %s\n", usage::kMetricNames[m], 0, "-", "-", "-",
                    "-", "-", "no held-out run measured a non-zero value");
      out += row;
      continue;
    }
    const std::pair<double, const char*> all[] = {{e.mean, "mean"}, {e.gnn, "gnn"}, {e.ridge, "ridge"}, {e.analytic, "analytic"}};  // ties: the baseline
    const char* best = std::min_element(std::begin(all), std::end(all), [](const auto& a, const auto& b) {
                         return a.first < b.first;
                       })->second;
    std::string verdict;
    verdict += e.gnn < e.mean ? "gnn: yes" : "gnn: NO";
    verdict += e.ridge < e.mean ? ", ridge: yes" : ", ridge: NO";
    verdict += e.analytic < e.mean ? ", analytic: yes" : ", analytic: NO";
    std::snprintf(row, sizeof row, "%-19s %4d %10.1f %9.1f %9.1f %9.1f  %-8s %s\n", usage::kMetricNames[m], e.samples,
                  e.analytic, e.ridge, e.gnn, e.mean, best, verdict.c_str());
    out += row;
  }
  return out;
}

}  // namespace tl::predict
