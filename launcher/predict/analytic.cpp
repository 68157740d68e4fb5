#include "launcher/predict/analytic.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/check.h"

namespace tl::predict {

void validate(const JobShape& s) {
  TL_REQUIRE(s.batch >= 1, "batch: must be at least 1, got ", s.batch);
  TL_REQUIRE(s.processes >= 1, "processes: must be at least 1, got ", s.processes);
  TL_REQUIRE(s.estsPerProcess >= 1, "ests per process: must be at least 1, got ", s.estsPerProcess);
  TL_REQUIRE(s.steps >= 1, "steps: must be at least 1, got ", s.steps);
  TL_REQUIRE(s.reduction == "exact" || s.reduction == "fp32", "reduction: unknown value '", s.reduction,
             "' (expected exact or fp32)");
  TL_REQUIRE(s.optimizer == "sgd" || s.optimizer == "adam", "optimizer: unknown value '", s.optimizer,
             "' (expected sgd or adam)");
  TL_REQUIRE(s.device == "cpu" || s.device == "cuda", "device: unknown value '", s.device,
             "' (expected cpu or cuda)");
  TL_REQUIRE(s.bandwidthBytesPerSecond > 0, "bandwidth: must be positive, got ", s.bandwidthBytesPerSecond);
  TL_REQUIRE(s.latencySeconds >= 0, "latency: must not be negative, got ", s.latencySeconds);
  TL_REQUIRE(s.computeThreads >= 1, "compute threads: must be at least 1, got ", s.computeThreads);
}

double gradientTrafficBytes(const JobShape& s, const ModelTrace& t) {
  const int n = s.processes;
  if (n <= 1) return 0;
  const double gradientBytes = double(t.parameterBytes) * (s.reduction == "exact" ? 2.0 : 1.0);
  return 2.0 * double(n - 1) / double(n) * gradientBytes;
}

usage::TwelveMetrics analyticPrediction(const JobShape& s, const ModelTrace& t) {
  validate(s);
  const double traffic = gradientTrafficBytes(s, t);
  const double commSeconds = s.processes > 1 ? traffic / s.bandwidthBytesPerSecond + s.latencySeconds : 0;
  const double computeSeconds = t.forwardBackwardSeconds * double(s.estsPerProcess);
  const double stepSeconds = computeSeconds + commSeconds;
  const double slots = s.optimizer == "adam" ? 2.0 : 1.0;
  const double mb = 1024.0 * 1024.0;
  const double memoryMb = t.processBaseMb +
                          (double(t.parameterBytes) * (2.0 + slots) + double(t.bufferBytes) +
                           double(t.activationPeakBytes)) / mb;
  const double rate = traffic > 0 ? s.bandwidthBytesPerSecond / 1e6 : 0;
  usage::TwelveMetrics m{};
  m[0] = commSeconds;                        // compute idles while the gradients travel
  m[1] = computeSeconds;
  m[2] = 1.0;
  m[3] = 0;                                  // memory: one burst, the whole run
  m[4] = stepSeconds * double(s.steps);
  m[5] = memoryMb;
  for (int dir = 0; dir < 2; ++dir) {        // TX and RX alike: one burst per step
    m[6 + 3 * dir] = traffic > 0 ? computeSeconds : 0;
    m[7 + 3 * dir] = traffic > 0 ? commSeconds : 0;
    m[8 + 3 * dir] = rate;
  }
  return m;
}

nlohmann::json toJson(const JobShape& s) {
  return {{"model", s.model.arch}, {"depth", s.model.depth}, {"batch", s.batch},
          {"processes", s.processes}, {"ests_per_process", s.estsPerProcess}, {"steps", s.steps},
          {"reduction", s.reduction}, {"optimizer", s.optimizer}, {"device", s.device},
          {"bandwidth_gbps", s.bandwidthBytesPerSecond / 1e9}, {"latency_us", s.latencySeconds * 1e6},
          {"compute_threads", s.computeThreads}};
}

JobShape jobShapeFromJson(const nlohmann::json& j) {
  JobShape s;
  try {
    s.model.arch = j.at("model").get<std::string>();
    s.model.depth = j.value("depth", 0);
    s.batch = j.at("batch").get<int64_t>();
    s.processes = j.at("processes").get<int>();
    s.estsPerProcess = j.value("ests_per_process", 1);
    s.steps = j.value("steps", int64_t(20));
    s.reduction = j.value("reduction", std::string("exact"));
    s.optimizer = j.value("optimizer", std::string("sgd"));
    s.device = j.value("device", std::string("cpu"));
    s.bandwidthBytesPerSecond = j.value("bandwidth_gbps", 2.0) * 1e9;
    s.latencySeconds = j.value("latency_us", 20.0) * 1e-6;
    s.computeThreads = j.value("compute_threads", 1);
  } catch (const nlohmann::json::exception& e) {
    inputError("job shape: ", e.what());
  }
  validate(s);
  return s;
}

}  // namespace tl::predict
