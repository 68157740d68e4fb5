// The analytic baseline of tl-predict: the twelve metrics (runtime/usage/twelve_metrics.h) of a
// job from its configuration and its model's trace, by first principles:
//  - traffic per step: the gradient allreduce, 2(N-1)/N x gradient bytes (int64 fixed point in
//    exact mode: twice the float32 bytes), at the link bandwidth plus a per-call latency;
//  - compute per step: the measured forward + backward time x ESTs per process, at full use of
//    the compute threads; it idles while the gradients travel;
//  - memory: runtime floor + parameters + gradients + optimizer state + peak activations, held
//    for the whole run (one burst).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "launcher/predict/model_trace.h"
#include "runtime/usage/twelve_metrics.h"

namespace tl::predict {

struct JobShape {
  models::ModelConfig model;
  int64_t batch = 16;
  int processes = 1;           // N: one EST per process unless estsPerProcess says otherwise
  int estsPerProcess = 1;
  int64_t steps = 20;
  std::string reduction = "exact";   // exact | fp32
  std::string optimizer = "sgd";     // sgd (momentum: one slot) | adam (two slots)
  std::string device = "cpu";        // cpu | cuda
  double bandwidthBytesPerSecond = 2e9;
  double latencySeconds = 20e-6;     // per collective call
  int computeThreads = 1;
};

// InputError naming the field when the shape cannot be predicted (N < 1, unknown reduction, ...).
void validate(const JobShape& shape);

// Gradient bytes each member sends (and receives) per step.
double gradientTrafficBytes(const JobShape& shape, const ModelTrace& trace);

usage::TwelveMetrics analyticPrediction(const JobShape& shape, const ModelTrace& trace);

nlohmann::json toJson(const JobShape& shape);
JobShape jobShapeFromJson(const nlohmann::json& j);  // InputError on a missing or bad field

}  // namespace tl::predict
