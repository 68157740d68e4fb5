// What tl-predict learns about a model before any job runs it, by building it and running one
// traced forward and backward pass on this machine: its layer graph (counts by kind), its size,
// the peak of the bytes allocated during the pass (activations and temporaries), and how long
// the pass takes with the job's compute threads (the measured compute rate), and the graph of
// the pass's operations (layer_graph.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tools/predict/layer_graph.h"
#include "runtime/models/model.h"

namespace tl::predict {

struct ModelTrace {
  int64_t parameters = 0;
  int64_t parameterBytes = 0;
  int64_t bufferBytes = 0;
  int64_t activationPeakBytes = 0;       // peak live CPU bytes during forward + backward
  double forwardBackwardSeconds = 0;     // median of the timed passes
  double processBaseMb = 0;              // this process's resident set before the model (runtime floor)
  std::map<std::string, int64_t> layers; // leaf modules by kind: Conv2d, Linear, BatchNorm2d, ...
  int64_t depth = 0;                     // leaf modules holding parameters
  LayerGraph graph;                      // the step's operations (the graph network's input)
};

// Builds `model` with `batch` images of its input shape; `computeThreads` intra-op threads.
ModelTrace traceModel(const models::ModelConfig& model, int64_t batch, int computeThreads, int timedPasses = 3);

nlohmann::json toJson(const ModelTrace& t);

}  // namespace tl::predict
