// tl-predict's pieces: the model trace, the analytic formulas, and the learned model recovering
// a relation it can express (and refusing bad input).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "tools/predict/evaluation.h"

namespace {

using namespace tl::predict;

TEST(ModelTrace, CountsTheModelAndMeasuresAPass) {
  tl::models::ModelConfig cnn;
  cnn.arch = "cnn";
  const ModelTrace t = traceModel(cnn, 8, 1, 1);
  EXPECT_EQ(t.parameters, tl::models::countParameters(*tl::models::createModel(cnn)));
  EXPECT_EQ(t.parameterBytes, 4 * t.parameters);
  EXPECT_GT(t.activationPeakBytes, 8 * 3 * 32 * 32 * 4);  // more than the input batch
  EXPECT_GT(t.forwardBackwardSeconds, 0);
  EXPECT_GE(t.layers.at("Conv2dImpl") + (t.layers.count("Conv2d") ? t.layers.at("Conv2d") : 0), 2);
  // A bigger batch needs more activation memory.
  EXPECT_GT(traceModel(cnn, 32, 1, 1).activationPeakBytes, t.activationPeakBytes);
}

TEST(Analytic, TrafficIsTheRingAllreduceOfTheGradients) {
  ModelTrace t;
  t.parameters = 1000;
  t.parameterBytes = 4000;
  t.forwardBackwardSeconds = 0.1;
  JobShape s;
  s.model.arch = "cnn";
  s.reduction = "fp32";
  s.processes = 1;
  EXPECT_EQ(gradientTrafficBytes(s, t), 0);
  s.processes = 2;
  EXPECT_DOUBLE_EQ(gradientTrafficBytes(s, t), 4000);
  s.processes = 4;
  EXPECT_DOUBLE_EQ(gradientTrafficBytes(s, t), 6000);
  s.reduction = "exact";  // int64 sums reduce-scattered (8 bytes), float32 means allgathered (4)
  EXPECT_DOUBLE_EQ(gradientTrafficBytes(s, t), 9000);
  s.bandwidthBytesPerSecond = 1.2e6;
  s.latencySeconds = 0;
  const auto m = analyticPrediction(s, t);
  EXPECT_DOUBLE_EQ(m[7], 0.0075);  // tx burst: 9 kB at 1.2 MB/s
  EXPECT_DOUBLE_EQ(m[1], 0.1);     // compute burst: the pass
  EXPECT_NEAR(m[0], 0.0075, 1e-12);  // compute idles while gradients travel (a difference of sums)
}

TEST(Analytic, RejectsBadShapes) {
  JobShape s;
  s.model.arch = "cnn";
  s.reduction = "sum";
  EXPECT_THROW(validate(s), tl::InputError);
  s.reduction = "fp32";
  s.processes = 0;
  EXPECT_THROW(validate(s), tl::InputError);
  EXPECT_THROW(jobShapeFromJson(nlohmann::json{{"model", "cnn"}}), tl::InputError);  // no batch
}

TEST(Learned, RecoversARelationOfItsFeaturesAndBeatsTheMean) {
  // Runs whose "measured" compute burst is 3x the pass time: a log-linear relation the ridge
  // model can express; the mean of the runs cannot.
  std::vector<Example> runs;
  for (int i = 0; i < 12; ++i) {
    Example e;
    e.shape.model.arch = "cnn";
    e.shape.batch = 8 << (i % 3);
    e.shape.processes = 1 + i % 3;
    e.trace.parameters = 1000 * (i + 1);
    e.trace.parameterBytes = 4 * e.trace.parameters;
    e.trace.activationPeakBytes = 100000 * (i + 1);
    e.trace.forwardBackwardSeconds = 0.01 * (i + 1);
    for (size_t m = 0; m < 12; ++m) e.measured[m] = 1.0;
    e.measured[1] = 3.0 * e.trace.forwardBackwardSeconds;
    runs.push_back(e);
  }
  const auto model = LearnedPredictor::fit(runs, 1e-3);
  Example probe = runs[4];
  probe.trace.forwardBackwardSeconds = 0.055;  // between the runs
  const double predicted = model.predict(probe.shape, probe.trace)[1];
  EXPECT_NEAR(predicted, 0.165, 0.165 * 0.1);
  // Round trip through JSON predicts the same.
  const auto back = LearnedPredictor::fromJson(model.toJson());
  EXPECT_DOUBLE_EQ(back.predict(probe.shape, probe.trace)[1], predicted);
  EXPECT_THROW(LearnedPredictor::fromJson(nlohmann::json{{"lambda", 1}}), tl::InputError);
}

TEST(Evaluation, TableSaysWhenAPredictorDoesNotBeatTheMean) {
  std::vector<MetricError> errors(12);
  errors[0] = {50, 10, 30, 20, 4};  // analytic, ridge, gnn, mean
  errors[1] = {5, 30, 10, 20, 4};
  const std::string table = errorTable(errors);
  EXPECT_NE(table.find("compute_idle_s"), std::string::npos);
  EXPECT_NE(table.find("ridge    gnn: NO, ridge: yes, analytic: NO"), std::string::npos) << table;
  EXPECT_NE(table.find("analytic gnn: yes, ridge: NO, analytic: yes"), std::string::npos) << table;
  EXPECT_NE(table.find("no held-out run measured a non-zero value"), std::string::npos);
}

}  // namespace

#include "tools/predict/sim_profile.h"
#include "tools/sched/sim/profiles.h"

namespace {

TEST(SimProfile, RowsAreTlSimProfilesOfTheAnalyticStepTime) {
  ModelTrace t;
  t.parameters = 250000;
  t.parameterBytes = 1000000;
  t.forwardBackwardSeconds = 0.05;
  JobShape s;
  s.model.arch = "resnet";
  s.model.depth = 20;
  s.batch = 32;
  s.reduction = "fp32";
  s.bandwidthBytesPerSecond = 1e8;
  s.latencySeconds = 0;
  const std::string csv = simProfileCsv(s, t, "resnet20", "cpu", {1, 2, 4});
  const auto set = tl::sched::ProfileSet::parse(csv, "tl-predict");
  EXPECT_NEAR(set.rate("resnet20", "cpu", 1), 32 / 0.05, 1e-3);
  EXPECT_NEAR(set.rate("resnet20", "cpu", 2), 2 * 32 / (0.05 + 1e6 / 1e8), 1e-3);  // 1 MB allreduce
  EXPECT_NEAR(set.rate("resnet20", "cpu", 4), 4 * 32 / (0.05 + 1.5e6 / 1e8), 1e-3);
  EXPECT_THROW(simProfileCsv(s, t, "a,b", "cpu", {1}), tl::InputError);
  EXPECT_THROW(simProfileCsv(s, t, "resnet20", "cpu", {0}), tl::InputError);
}

}  // namespace
