#include "tools/predict/calibration.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/check.h"

namespace tl::predict {
namespace {

double median(std::vector<double> v, double fallback) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !(x > 0) || !std::isfinite(x); }), v.end());
  if (v.empty()) return fallback;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

Calibration calibrate(const std::vector<Example>& runs) {
  Calibration c;
  std::vector<double> rates, commRates, collectives;
  for (const Example& e : runs) {
    const RunCounts& o = e.observed;
    if (!o.recorded || o.steps <= 0) continue;
    // CPU seconds per step: burst time x utilisation during bursts.
    const double busy = o.computeBursts * e.measured[1] * e.measured[2] / o.steps;
    rates.push_back(3.0 * double(e.trace.graph.totalFlops()) * double(e.shape.estsPerProcess) / busy);
    if (e.shape.processes > 1 && o.txBursts > 0) {
      commRates.push_back(o.txBytesPerStep / (o.txBursts * e.measured[7] / o.steps));
      collectives.push_back(o.txBursts / o.steps);
    }
  }
  c.flopsPerSecond = median(rates, 0);
  c.commBytesPerSecond = median(commRates, 0);
  c.collectivesPerStep = median(collectives, 1);
  // Cores: from each run's step, S = C / min(1, c / N) + T, solved for c.
  std::vector<double> cores;
  for (const Example& e : runs) {
    const RunCounts& o = e.observed;
    if (!o.recorded || o.steps <= 0) continue;
    Calibration measuredRates = c;
    measuredRates.cores = 0;
    const StepTimes st = analyticStep(e.shape, e.trace, measuredRates);
    const double step = o.spanSeconds / o.steps;
    const double waiting = step - st.comm;
    if (waiting > st.compute) cores.push_back(double(e.shape.processes * e.shape.computeThreads) * st.compute / waiting);
  }
  c.cores = median(cores, 0);
  // Slices: the compute bursts (and their utilisation) of runs whose processes outnumber the cores.
  std::vector<double> slices, utilisations;
  for (const Example& e : runs)
    if (e.observed.recorded && c.cores > 0 && double(e.shape.processes * e.shape.computeThreads) > c.cores) {
      slices.push_back(e.measured[1]);
      utilisations.push_back(e.measured[2]);
    }
  c.sliceSeconds = median(slices, 0);
  c.sharedUtilisation = median(utilisations, 0);
  return c;
}

nlohmann::json toJson(const Calibration& c) {
  return {{"flops_per_s", c.flopsPerSecond},       {"comm_bytes_per_s", c.commBytesPerSecond},
          {"collectives_per_step", c.collectivesPerStep}, {"cores", c.cores},
          {"slice_s", c.sliceSeconds},             {"shared_utilisation", c.sharedUtilisation},
          {"sample_period_s", c.samplePeriodSeconds}};
}

Calibration calibrationFromJson(const nlohmann::json& j) {
  Calibration c;
  try {
    c.flopsPerSecond = j.at("flops_per_s").get<double>();
    c.commBytesPerSecond = j.at("comm_bytes_per_s").get<double>();
    c.collectivesPerStep = j.at("collectives_per_step").get<double>();
    c.cores = j.at("cores").get<double>();
    c.sliceSeconds = j.at("slice_s").get<double>();
    c.sharedUtilisation = j.at("shared_utilisation").get<double>();
    c.samplePeriodSeconds = j.at("sample_period_s").get<double>();
  } catch (const nlohmann::json::exception& e) {
    inputError("calibration: ", e.what());
  }
  TL_REQUIRE(c.flopsPerSecond >= 0 && c.commBytesPerSecond >= 0 && c.collectivesPerStep >= 0 && c.cores >= 0 &&
                 c.sliceSeconds >= 0 && c.sharedUtilisation >= 0 && c.samplePeriodSeconds >= 0,
             "calibration: a constant is negative");
  return c;
}

}  // namespace tl::predict
