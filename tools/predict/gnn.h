// tl-predict's graph network (after Driple): the twelve metrics of a job from its layer graph
// (layer_graph.h) and its configuration.
//  - each operation's features (kind, parameters, FLOPs, output size) are embedded by a linear
//    layer, then `rounds` rounds of message passing: a node's new state is
//    relu(W_self h + W_in mean(h of its producers) + W_out mean(h of its consumers));
//  - the readout is the mean of the node states, concatenated with the job's features (batch,
//    N, reduction, device, threads, ESTs per process, the gradient traffic, and the graph's
//    totals) and fed to a two-layer head with one output per metric. Nothing measured on this
//    machine goes in (unlike the ridge model's pass time): a dataset gives the same network;
//  - it is trained on log(metric + floor), standardised, by full-batch Adam from a fixed seed on
//    one thread, so the same dataset gives the same weights; a prediction is held within the
//    range of log targets seen in training (tens of graphs do not support extrapolating).
// Weights and the standardisation are saved as JSON; a loaded model predicts bit-identically.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tools/predict/learned.h"

namespace tl::predict {

struct GnnOptions {
  int hidden = 32;
  int rounds = 3;
  int epochs = 200;
  double learningRate = 5e-3;
  double weightDecay = 1e-4;
  uint64_t seed = 15;
};

class GnnPredictor {
 public:
  // InputError when fewer than 2 runs or a run's trace has no layer graph.
  static GnnPredictor fit(const std::vector<Example>& examples, const GnnOptions& options = {});
  usage::TwelveMetrics predict(const JobShape& shape, const ModelTrace& trace) const;

  nlohmann::json toJson() const;
  static GnnPredictor fromJson(const nlohmann::json& j);  // InputError when malformed

  // What the last fit reached: mean squared error on the standardised log targets.
  double trainingLoss() const { return trainingLoss_; }

  struct Net;  // the libtorch module (gnn.cpp)

 private:
  GnnOptions options_;
  std::shared_ptr<Net> net_;
  std::vector<double> nodeMean_, nodeScale_, jobMean_, jobScale_, targetMean_, targetScale_;
  std::vector<double> targetLow_, targetHigh_;  // log targets seen in training: predictions stay inside
  double trainingLoss_ = 0;
};

// The job-level inputs of the readout, in order (documented in the saved model).
std::vector<std::string> gnnJobFeatureNames();

// "kind" of a saved model file: "gnn" or "ridge"; InputError for anything else.
std::string learnedModelKind(const nlohmann::json& j);

}  // namespace tl::predict
