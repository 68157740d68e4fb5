#include "tools/predict/analytic.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/check.h"

namespace tl::predict {

int optimizerSlots(const std::string& optimizer) {
  if (optimizer == "sgd" || optimizer == "nesterov" || optimizer == "adagrad") return 1;
  if (optimizer == "adam" || optimizer == "adamw" || optimizer == "adadelta") return 2;
  inputError("optimizer: unknown value '", optimizer,
             "' (expected sgd, nesterov, adagrad, adam, adamw or adadelta)");
}

void validate(const JobShape& s) {
  TL_REQUIRE(s.batch >= 1, "batch: must be at least 1, got ", s.batch);
  TL_REQUIRE(s.processes >= 1, "processes: must be at least 1, got ", s.processes);
  TL_REQUIRE(s.estsPerProcess >= 1, "ests per process: must be at least 1, got ", s.estsPerProcess);
  TL_REQUIRE(s.steps >= 1, "steps: must be at least 1, got ", s.steps);
  TL_REQUIRE(s.reduction == "exact" || s.reduction == "fp32", "reduction: unknown value '", s.reduction,
             "' (expected exact or fp32)");
  optimizerSlots(s.optimizer);
  TL_REQUIRE(s.device == "cpu" || s.device == "cuda", "device: unknown value '", s.device,
             "' (expected cpu or cuda)");
  TL_REQUIRE(s.bandwidthBytesPerSecond > 0, "bandwidth: must be positive, got ", s.bandwidthBytesPerSecond);
  TL_REQUIRE(s.latencySeconds >= 0, "latency: must not be negative, got ", s.latencySeconds);
  TL_REQUIRE(s.computeThreads >= 1, "compute threads: must be at least 1, got ", s.computeThreads);
}

double gradientTrafficBytes(const JobShape& s, const ModelTrace& t) {
  const int n = s.processes;
  if (n <= 1) return 0;
  // Exact mode: a reduce-scatter of int64 sums (8 bytes) and an allgather of float32 means (4).
  const double gradientBytes = double(t.parameterBytes) * (s.reduction == "exact" ? 1.5 : 1.0);
  return 2.0 * double(n - 1) / double(n) * gradientBytes;
}

StepTimes analyticStep(const JobShape& s, const ModelTrace& t, const Calibration& cal) {
  validate(s);
  StepTimes st;
  const double flops = 3.0 * double(t.graph.totalFlops()) * double(s.estsPerProcess);  // backward ~ 2x forward
  st.compute = cal.flopsPerSecond > 0 && flops > 0 ? flops / cal.flopsPerSecond
                                                   : t.forwardBackwardSeconds * double(s.estsPerProcess);
  const double traffic = gradientTrafficBytes(s, t);
  const double rate = cal.commBytesPerSecond > 0 ? cal.commBytesPerSecond : s.bandwidthBytesPerSecond;
  st.comm = s.processes > 1 ? traffic / rate + cal.collectivesPerStep * s.latencySeconds : 0;
  st.share = cal.cores > 0 ? std::min(1.0, cal.cores / double(s.processes * s.computeThreads)) : 1.0;
  st.step = st.compute / st.share + st.comm;
  return st;
}

usage::TwelveMetrics analyticPrediction(const JobShape& s, const ModelTrace& t, const Calibration& cal) {
  const StepTimes st = analyticStep(s, t, cal);
  const double run = st.step * double(s.steps);
  const double pause = st.step - st.compute;  // per step: waiting for the gradients and for a core
  const double slots = optimizerSlots(s.optimizer);
  const double mb = 1024.0 * 1024.0;
  usage::TwelveMetrics m{};
  if (pause < cal.samplePeriodSeconds) {
    m[0] = 0;  // pauses the sampler cannot see: one burst, the whole run
    m[1] = run;
  } else if (st.share < 1.0 && cal.sliceSeconds > 0) {
    // Shared cores: the scheduler interleaves the processes far finer than the 5 ms sample, so
    // a sample with any compute is above the threshold; an idle period is seen only when a whole
    // sample passed without, and it is then one sample long.
    m[0] = cal.samplePeriodSeconds;
    m[1] = cal.sliceSeconds;
  } else {
    m[0] = pause;
    m[1] = st.compute;
  }
  m[2] = st.share < 1.0 && cal.sharedUtilisation > 0 ? cal.sharedUtilisation : st.share;
  m[3] = 0;  // memory: one burst, the whole run
  m[4] = run;
  m[5] = t.processBaseMb +
         (double(t.parameterBytes) * (2.0 + slots) + double(t.bufferBytes) + double(t.activationPeakBytes)) / mb;
  const double traffic = gradientTrafficBytes(s, t);
  for (int dir = 0; dir < 2; ++dir) {  // TX and RX alike
    if (traffic <= 0) {
      m[6 + 3 * dir] = run;  // no traffic: one idle period, the whole run
      continue;
    }
    const double k = std::max(1.0, cal.collectivesPerStep);
    m[6 + 3 * dir] = (st.step - st.comm) / k;
    m[7 + 3 * dir] = st.comm / k;
    m[8 + 3 * dir] = traffic / st.comm / 1e6;
  }
  return m;
}

nlohmann::json toJson(const JobShape& s) {
  return {{"model", s.model.arch}, {"depth", s.model.depth}, {"batchnorm", s.model.batchNorm}, {"batch", s.batch},
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
    s.model.batchNorm = j.value("batchnorm", true);
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
