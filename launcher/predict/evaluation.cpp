#include "launcher/predict/evaluation.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/check.h"

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
    } catch (const std::exception& ex) {
      inputError("dataset '", path, "' line ", lineNo, ": ", ex.what());
    }
    const std::string key = modelKey(e.shape.model) + "/" + std::to_string(e.shape.batch) + "/" +
                            std::to_string(e.shape.computeThreads);
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

std::vector<MetricError> evaluateHeldOut(const std::vector<Example>& runs, const std::set<std::string>& heldOut) {
  std::vector<Example> train, test;
  for (const Example& e : runs) (heldOut.count(modelKey(e.shape.model)) ? test : train).push_back(e);
  TL_REQUIRE(!test.empty(), "evaluation: no run of the held-out models in the dataset");
  TL_REQUIRE(train.size() >= 2, "evaluation: fewer than 2 runs left to fit on");
  const LearnedPredictor learned = LearnedPredictor::fit(train);
  std::vector<MetricError> errors(12);
  for (size_t m = 0; m < 12; ++m) {
    double mean = 0;
    for (const Example& e : train) mean += e.measured[m];
    mean /= double(train.size());
    for (const Example& e : test) {
      const double actual = e.measured[m];
      if (actual == 0) continue;  // a percentage of nothing: left out (counted in `samples`)
      const double a = analyticPrediction(e.shape, e.trace)[m];
      const double l = learned.predict(e.shape, e.trace)[m];
      errors[m].analytic += std::fabs(a - actual) / actual;
      errors[m].learned += std::fabs(l - actual) / actual;
      errors[m].mean += std::fabs(mean - actual) / actual;
      ++errors[m].samples;
    }
    if (errors[m].samples > 0) {
      const double scale = 100.0 / double(errors[m].samples);
      errors[m].analytic *= scale;
      errors[m].learned *= scale;
      errors[m].mean *= scale;
    }
  }
  return errors;
}

std::string errorTable(const std::vector<MetricError>& errors) {
  std::string out;
  char row[256];
  std::snprintf(row, sizeof row, "%-20s %7s %12s %12s %12s  %-9s %s\n", "metric", "runs", "analytic %",
                "learned %", "mean %", "best", "beats the mean baseline?");
  out += row;
  for (size_t m = 0; m < errors.size(); ++m) {
    const MetricError& e = errors[m];
    if (e.samples == 0) {
      std::snprintf(row, sizeof row, "%-20s %7d %12s %12s %12s  %-9s %s\n", usage::kMetricNames[m], 0, "-", "-",
                    "-", "-", "no held-out run measured a non-zero value");
      out += row;
      continue;
    }
    const char* best = e.learned <= e.analytic && e.learned <= e.mean ? "learned"
                       : e.analytic <= e.mean                         ? "analytic"
                                                                      : "mean";
    std::string verdict;
    verdict += e.learned < e.mean ? "learned: yes" : "learned: NO";
    verdict += e.analytic < e.mean ? ", analytic: yes" : ", analytic: NO";
    std::snprintf(row, sizeof row, "%-20s %7d %12.1f %12.1f %12.1f  %-9s %s\n", usage::kMetricNames[m], e.samples,
                  e.analytic, e.learned, e.mean, best, verdict.c_str());
    out += row;
  }
  return out;
}

}  // namespace tl::predict
