// tl-predict's graph network, layer graph and analytic calibration: the network learns a metric
// that is a known function of the graph and N, a saved network predicts bit-identically, a fit
// is reproducible, and malformed input is refused with an InputError.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "tools/predict/calibration.h"
#include "tools/predict/evaluation.h"

namespace {

using namespace tl::predict;

// A chain of `layers` linear layers of `width` x `width`, with an activation between them and a
// loss at the end: what a small MLP's autograd graph looks like.
LayerGraph chain(int layers, int64_t width, int64_t batch) {
  LayerGraph g;
  for (int i = 0; i < layers; ++i) {
    g.nodes.push_back({OpKind::Linear, width * width + width, 2 * batch * width * width, batch * width});
    g.nodes.push_back({OpKind::Activation, 0, batch * width, batch * width});
  }
  g.nodes.push_back({OpKind::Loss, 0, batch * 10, 1});
  for (int i = 0; i + 1 < int(g.nodes.size()); ++i) g.edges.emplace_back(i, i + 1);
  return g;
}

Example syntheticRun(int layers, int64_t width, int processes) {
  Example e;
  e.shape.model.arch = "mlp";
  e.shape.batch = 16;
  e.shape.processes = processes;
  e.shape.reduction = "fp32";
  e.trace.graph = chain(layers, width, e.shape.batch);
  e.trace.parameters = e.trace.graph.totalParameters();
  e.trace.parameterBytes = 4 * e.trace.parameters;
  e.trace.forwardBackwardSeconds = 0.01;
  for (size_t m = 0; m < 12; ++m) e.measured[m] = 1.0;
  // The known answer: a burst that moves the ring allreduce's bytes at 100 MB/s.
  const double n = processes;
  e.measured[7] = 2.0 * (n - 1.0) / n * double(e.trace.parameterBytes) / 1e8;
  return e;
}

GnnOptions quick() {
  GnnOptions o;
  o.hidden = 16;
  o.rounds = 2;
  o.epochs = 400;
  o.learningRate = 1e-2;
  return o;
}

std::vector<Example> syntheticRuns() {
  std::vector<Example> runs;
  for (int layers : {2, 3, 5})
    for (int64_t width : {32, 64, 128, 256})
      for (int n : {2, 3, 4}) runs.push_back(syntheticRun(layers, width, n));
  return runs;
}

TEST(Gnn, LearnsAMetricThatIsAKnownFunctionOfTheGraphAndN) {
  const GnnPredictor gnn = GnnPredictor::fit(syntheticRuns(), quick());
  EXPECT_LT(gnn.trainingLoss(), 0.02);
  // Graphs it has not seen: 4 layers, width 96 and 192.
  for (int64_t width : {96, 192}) {
    for (int n : {2, 4}) {
      const Example probe = syntheticRun(4, width, n);
      const double want = probe.measured[7];
      EXPECT_NEAR(gnn.predict(probe.shape, probe.trace)[7], want, 0.2 * want) << "width " << width << " N " << n;
      EXPECT_NEAR(gnn.predict(probe.shape, probe.trace)[0], 1.0, 0.1);
    }
  }
}

TEST(Gnn, FitIsReproducibleAndASavedNetworkPredictsIdentically) {
  const auto runs = syntheticRuns();
  GnnOptions o = quick();
  o.epochs = 50;
  const GnnPredictor a = GnnPredictor::fit(runs, o);
  const GnnPredictor b = GnnPredictor::fit(runs, o);
  EXPECT_EQ(a.toJson().dump(), b.toJson().dump());  // same seed, same data: same weights
  const GnnPredictor loaded = GnnPredictor::fromJson(nlohmann::json::parse(a.toJson().dump()));
  EXPECT_EQ(learnedModelKind(a.toJson()), "gnn");
  for (const Example& e : {syntheticRun(3, 100, 2), syntheticRun(6, 40, 5)}) {
    const auto before = a.predict(e.shape, e.trace), after = loaded.predict(e.shape, e.trace);
    for (size_t m = 0; m < 12; ++m) EXPECT_EQ(before[m], after[m]) << m;
  }
}

TEST(Gnn, RefusesBadInput) {
  const auto runs = syntheticRuns();
  EXPECT_THROW(GnnPredictor::fit({runs[0]}, quick()), tl::InputError);
  Example noGraph = runs[0];
  noGraph.trace.graph = {};
  EXPECT_THROW(GnnPredictor::fit({runs[0], noGraph}, quick()), tl::InputError);
  GnnOptions o = quick();
  o.epochs = 5;
  const nlohmann::json good = GnnPredictor::fit(runs, o).toJson();
  EXPECT_THROW(GnnPredictor(GnnPredictor::fit(runs, o)).predict(noGraph.shape, noGraph.trace), tl::InputError);
  nlohmann::json wrongShape = good;
  wrongShape["parameters"]["head2.weight"]["shape"] = {12, 3};
  EXPECT_THROW(GnnPredictor::fromJson(wrongShape), tl::InputError);
  nlohmann::json missing = good;
  missing.erase("target_scale");
  EXPECT_THROW(GnnPredictor::fromJson(missing), tl::InputError);
  nlohmann::json shortVector = good;
  shortVector["node_mean"] = {0.0, 1.0};
  EXPECT_THROW(GnnPredictor::fromJson(shortVector), tl::InputError);
  EXPECT_THROW(GnnPredictor::fromJson(LearnedPredictor::fit(runs).toJson()), tl::InputError);  // a ridge file
  EXPECT_EQ(learnedModelKind(LearnedPredictor::fit(runs).toJson()), "ridge");
  EXPECT_THROW(learnedModelKind(nlohmann::json{{"kind", "forest"}}), tl::InputError);
}

TEST(LayerGraph, IsTheAutogradGraphOfTheStepWithItsResidualAdds) {
  tl::models::ModelConfig resnet;
  resnet.arch = "resnet";
  resnet.depth = 8;
  const ModelTrace r = traceModel(resnet, 4, 1, 1);
  EXPECT_EQ(r.graph.totalParameters(), r.parameters);  // every parameter read by one operation
  int convs = 0, adds = 0;
  std::vector<int> producers(r.graph.nodes.size(), 0);
  for (const auto& [from, to] : r.graph.edges) ++producers[size_t(to)];
  for (size_t i = 0; i < r.graph.nodes.size(); ++i) {
    convs += r.graph.nodes[i].kind == OpKind::Conv;
    if (r.graph.nodes[i].kind == OpKind::Add) {
      ++adds;
      EXPECT_EQ(producers[i], 2);  // the block's branch and its shortcut
    }
  }
  EXPECT_EQ(convs, 1 + 2 * 3);  // the stem and two per basic block (3 blocks at depth 8)
  EXPECT_EQ(adds, 3);
  // The stem: 3 -> 16 channels, 3x3, on 32x32 images of batch 4.
  const LayerNode* stem = nullptr;
  for (const auto& n : r.graph.nodes)
    if (n.kind == OpKind::Conv && n.parameters == 16 * 3 * 3 * 3) stem = &n;
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->outputElements, 4 * 16 * 32 * 32);
  EXPECT_EQ(stem->flops, 2 * stem->outputElements * 3 * 3 * 3);
  EXPECT_EQ(opKindOfNode("ConvolutionBackward0"), OpKind::Conv);
  EXPECT_EQ(opKindOfNode("AddmmBackward0"), OpKind::Linear);
  EXPECT_EQ(opKindOfNode("AddBackward0"), OpKind::Add);
}

TEST(Calibration, RecoversTheRatesARunWasMadeWith) {
  // Runs made with a 1 GFLOP/s core, a 50 MB/s communicator, 2 collectives per step and one
  // core shared by all processes.
  std::vector<Example> runs;
  for (int n : {1, 2, 3}) {
    Example e = syntheticRun(3, 64, n);
    const double compute = 3.0 * double(e.trace.graph.totalFlops()) / 1e9;
    const double bytes = gradientTrafficBytes(e.shape, e.trace);
    e.shape.latencySeconds = 0;
    const double comm = bytes / 5e7;
    e.observed = {true, /*computeBursts=*/10, /*txBursts=*/n > 1 ? 20.0 : 0.0, 0, /*steps=*/10, bytes};
    e.observed.spanSeconds = 10 * (compute * n + comm);
    e.measured[1] = compute;  // one burst per step, full use
    e.measured[2] = 1.0;
    e.measured[7] = comm / 2;
    runs.push_back(e);
  }
  const Calibration c = calibrate(runs);
  EXPECT_NEAR(c.flopsPerSecond, 1e9, 1e3);
  EXPECT_NEAR(c.commBytesPerSecond, 5e7, 1);
  EXPECT_DOUBLE_EQ(c.collectivesPerStep, 2);
  EXPECT_NEAR(c.cores, 1.0, 1e-9);
  const Calibration back = calibrationFromJson(toJson(c));
  EXPECT_EQ(back.flopsPerSecond, c.flopsPerSecond);
  EXPECT_THROW(calibrationFromJson(nlohmann::json{{"cores", 1}}), tl::InputError);
  // The analytic model with it: N = 3 on one core takes 3x the compute plus the allreduce.
  const StepTimes st = analyticStep(runs[2].shape, runs[2].trace, c);
  EXPECT_NEAR(st.step, runs[2].observed.spanSeconds / 10, 1e-9);
  const auto m = analyticPrediction(runs[2].shape, runs[2].trace, c);
  EXPECT_NEAR(m[7], st.comm / 2, 1e-12);  // two bursts per step
  EXPECT_NEAR(m[8], 50.0, 1e-6);          // MB/s during a burst
}

TEST(Analytic, SingleProcessHasNoTrafficAndOneComputeBurst) {
  Example e = syntheticRun(2, 64, 1);
  e.shape.steps = 20;
  const auto m = analyticPrediction(e.shape, e.trace);
  EXPECT_EQ(m[0], 0);                        // no pause the sampler could see
  EXPECT_DOUBLE_EQ(m[1], 20 * 0.01);         // one burst: the whole run
  EXPECT_DOUBLE_EQ(m[6], 20 * 0.01);         // TX idle for the whole run
  EXPECT_EQ(m[7], 0);
}

}  // namespace
