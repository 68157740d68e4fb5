// The analytic baseline of tl-predict: the twelve metrics (runtime/usage/twelve_metrics.h) of a
// job from its configuration, its model's trace and a few rates measured on this machine
// (Calibration), by the step's structure. The formulas, each explained, are in
// docs/design/resource-usage.md ("The analytic model"):
//  - compute per step C = 3 x forward FLOPs x ESTs per process / FLOP rate;
//  - traffic per step B = 2(N-1)/N x gradient bytes (x 1.5 in exact mode: a
//    reduce-scatter of int64 sums, then an allgather of float32 means),
//    moved in k collective bursts at the communicator's measured rate: T = B / rate + k x latency;
//  - N processes on c cores each get a share u = min(1, c/N): step S = C/u + T;
//  - compute runs in one burst per step (the whole run when the pauses are shorter than the
//    recorder's sample), or, when the cores are shared, in bursts of q seconds broken by single
//    idle samples;
//  - memory: runtime floor + parameters + gradients + optimizer state + peak activations, held
//    for the whole run (one burst).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tools/predict/model_trace.h"
#include "runtime/usage/twelve_metrics.h"

namespace tl::predict {

struct JobShape {
  models::ModelConfig model;        // model.batchNorm: "batchnorm" in JSON
  int64_t batch = 16;
  int processes = 1;           // N: one EST per process unless estsPerProcess says otherwise
  int estsPerProcess = 1;
  int64_t steps = 20;
  std::string reduction = "exact";   // exact | fp32
  std::string optimizer = "sgd";     // tl-launch's: sgd (momentum: one slot) | adam (two) | ...
  std::string device = "cpu";        // cpu | cuda
  double bandwidthBytesPerSecond = 2e9;
  double latencySeconds = 20e-6;     // per collective call
  int computeThreads = 1;
};

// What the analytic model takes from this machine. Defaults: the trace's own pass time as the
// compute rate, the job's --bandwidth-gbps, one collective per step, a core per process.
// calibrate() (calibration.h) measures them from recorded runs.
struct Calibration {
  double flopsPerSecond = 0;        // 0: 3 x forward FLOPs / the traced pass time
  double commBytesPerSecond = 0;    // 0: the job's bandwidth
  double collectivesPerStep = 1;    // traffic bursts per step (gradient buckets, loss, metrics)
  double cores = 0;                 // cores the processes share; 0: one each (no contention)
  double sliceSeconds = 0;          // a compute burst's length when the cores are shared; 0: none
  double sharedUtilisation = 0;     // utilisation during those bursts; 0: the share of a core
  double samplePeriodSeconds = 0.005;  // pauses shorter than the recorder's sample are not seen
};

// The state slots per parameter an optimizer keeps: sgd, nesterov and adagrad one, adam, adamw
// and adadelta two. InputError naming an unknown one.
int optimizerSlots(const std::string& optimizer);

// InputError naming the field when the shape cannot be predicted (N < 1, unknown reduction, ...).
void validate(const JobShape& shape);

// Gradient bytes each member sends (and receives) per step.
double gradientTrafficBytes(const JobShape& shape, const ModelTrace& trace);

// Compute seconds per step (C), collective seconds per step (T) and the step (S = C/u + T).
struct StepTimes {
  double compute = 0, comm = 0, step = 0, share = 1;
};
StepTimes analyticStep(const JobShape& shape, const ModelTrace& trace, const Calibration& calibration = {});

usage::TwelveMetrics analyticPrediction(const JobShape& shape, const ModelTrace& trace,
                                        const Calibration& calibration = {});

nlohmann::json toJson(const JobShape& shape);
JobShape jobShapeFromJson(const nlohmann::json& j);  // InputError on a missing or bad field

}  // namespace tl::predict
