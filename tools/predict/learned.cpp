#include "tools/predict/learned.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/check.h"

namespace tl::predict {
namespace {

double layerCount(const ModelTrace& t, const std::string& kind) {
  auto it = t.layers.find(kind);
  return it == t.layers.end() ? 0.0 : double(it->second);
}

// Solves (A) x = b by Gaussian elimination with partial pivoting; A is small and, with the
// ridge term, positive definite.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    TL_CHECK(std::fabs(a[c][c]) > 1e-12, "ridge system is singular");
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= a[i][k] * x[k];
    x[i] = s / a[i][i];
  }
  return x;
}

}  // namespace

double logFloor(size_t metric) {
  if (metric % 3 != 2) return 1e-4;  // durations, seconds
  return metric == 5 ? 1.0 : 1e-3;   // MB; utilisation and MB/s
}

std::string modelKey(const models::ModelConfig& m) {
  return m.arch == "resnet" ? "resnet-" + std::to_string(m.depth) : m.arch;
}

std::vector<std::string> featureNames() {
  return {"log_parameters", "log_activation_peak", "log_pass_s", "log_batch", "processes",
          "log_traffic",    "depth",               "log1p_conv", "log1p_linear", "log1p_batchnorm",
          "log_analytic"};
}

std::vector<double> features(const JobShape& s, const ModelTrace& t, size_t metric) {
  const usage::TwelveMetrics analytic = analyticPrediction(s, t);
  return {std::log(double(t.parameters) + 1.0),
          std::log(double(t.activationPeakBytes) + 1.0),
          std::log(t.forwardBackwardSeconds * double(s.estsPerProcess) + 1e-6),
          std::log(double(s.batch)),
          double(s.processes),
          std::log(gradientTrafficBytes(s, t) + 1.0),
          double(t.depth),
          std::log1p(layerCount(t, "Conv2d") + layerCount(t, "Conv2dImpl")),
          std::log1p(layerCount(t, "Linear") + layerCount(t, "LinearImpl")),
          std::log1p(layerCount(t, "BatchNorm2d") + layerCount(t, "BatchNorm2dImpl")),
          std::log(analytic[metric] + logFloor(metric))};
}

LearnedPredictor LearnedPredictor::fit(const std::vector<Example>& examples, double lambda) {
  TL_REQUIRE(examples.size() >= 2, "fitting the learned predictor needs at least 2 runs, got ", examples.size());
  LearnedPredictor p;
  p.lambda_ = lambda;
  for (size_t m = 0; m < 12; ++m) {
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    for (const Example& e : examples) {
      x.push_back(features(e.shape, e.trace, m));
      y.push_back(std::log(e.measured[m] + logFloor(m)));
    }
    const size_t d = x[0].size();
    Linear& lin = p.metrics_[m];
    lin.mean.assign(d, 0);
    lin.scale.assign(d, 1);
    for (size_t k = 0; k < d; ++k) {
      double sum = 0, sq = 0;
      for (const auto& row : x) sum += row[k];
      lin.mean[k] = sum / double(x.size());
      for (const auto& row : x) sq += (row[k] - lin.mean[k]) * (row[k] - lin.mean[k]);
      const double sd = std::sqrt(sq / double(x.size()));
      lin.scale[k] = sd > 1e-9 ? sd : 1.0;
    }
    // Normal equations with the intercept unpenalised.
    std::vector<std::vector<double>> a(d + 1, std::vector<double>(d + 1, 0));
    std::vector<double> b(d + 1, 0);
    for (size_t i = 0; i < x.size(); ++i) {
      std::vector<double> z(d + 1, 1.0);
      for (size_t k = 0; k < d; ++k) z[k + 1] = (x[i][k] - lin.mean[k]) / lin.scale[k];
      for (size_t r = 0; r <= d; ++r) {
        b[r] += z[r] * y[i];
        for (size_t c = 0; c <= d; ++c) a[r][c] += z[r] * z[c];
      }
    }
    for (size_t k = 1; k <= d; ++k) a[k][k] += lambda;
    lin.weights = solve(a, b);
  }
  return p;
}

usage::TwelveMetrics LearnedPredictor::predict(const JobShape& s, const ModelTrace& t) const {
  usage::TwelveMetrics out{};
  for (size_t m = 0; m < 12; ++m) {
    const Linear& lin = metrics_[m];
    const std::vector<double> x = features(s, t, m);
    double y = lin.weights[0];
    for (size_t k = 0; k < x.size(); ++k) y += lin.weights[k + 1] * (x[k] - lin.mean[k]) / lin.scale[k];
    out[m] = std::max(0.0, std::exp(y) - logFloor(m));
  }
  return out;
}

nlohmann::json LearnedPredictor::toJson() const {
  nlohmann::json j;
  j["kind"] = "tl-predict ridge regression on log metrics";
  j["lambda"] = lambda_;
  j["features"] = featureNames();
  for (size_t m = 0; m < 12; ++m) {
    j["metrics"][usage::kMetricNames[m]] = {
        {"mean", metrics_[m].mean}, {"scale", metrics_[m].scale}, {"weights", metrics_[m].weights}};
  }
  return j;
}

LearnedPredictor LearnedPredictor::fromJson(const nlohmann::json& j) {
  LearnedPredictor p;
  const size_t d = featureNames().size();
  try {
    p.lambda_ = j.at("lambda").get<double>();
    for (size_t m = 0; m < 12; ++m) {
      const auto& e = j.at("metrics").at(usage::kMetricNames[m]);
      Linear& lin = p.metrics_[m];
      lin.mean = e.at("mean").get<std::vector<double>>();
      lin.scale = e.at("scale").get<std::vector<double>>();
      lin.weights = e.at("weights").get<std::vector<double>>();
      TL_REQUIRE(lin.mean.size() == d && lin.scale.size() == d && lin.weights.size() == d + 1,
                 "learned model: metric ", usage::kMetricNames[m], " has ", lin.weights.size(),
                 " weights, expected ", d + 1);
    }
  } catch (const nlohmann::json::exception& e) {
    inputError("learned model: ", e.what());
  }
  return p;
}

}  // namespace tl::predict
