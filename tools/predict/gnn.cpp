#include "tools/predict/gnn.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/check.h"

namespace tl::predict {
namespace {

constexpr const char* kGnnKind = "tl-predict gnn";
constexpr const char* kRidgeKind = "tl-predict ridge regression on log metrics";

// Graphs stacked into one node set: node i belongs to graph graphOf[i]; aggregation over
// producers / consumers and the readout are index_add's divided by the counts.
struct GraphBatch {
  at::Tensor x, src, dst, inverseInDegree, inverseOutDegree, graphOf, inverseNodeCount;
  int64_t graphs = 0;
};

bool sameGraph(const LayerGraph& a, const LayerGraph& b) {
  if (a.nodes.size() != b.nodes.size() || a.edges != b.edges) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const LayerNode &p = a.nodes[i], &q = b.nodes[i];
    if (p.kind != q.kind || p.parameters != q.parameters || p.flops != q.flops ||
        p.outputElements != q.outputElements)
      return false;
  }
  return true;
}

at::Tensor standardised(const std::vector<std::vector<float>>& rows, const std::vector<double>& mean,
                        const std::vector<double>& scale) {
  const int64_t n = int64_t(rows.size()), d = int64_t(mean.size());
  at::Tensor t = at::empty({n, d}, at::kFloat);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k) p[i * d + k] = float((rows[size_t(i)][size_t(k)] - mean[size_t(k)]) / scale[size_t(k)]);
  return t;
}

void fitStandardisation(const std::vector<std::vector<float>>& rows, std::vector<double>& mean,
                        std::vector<double>& scale) {
  const size_t d = rows.at(0).size();
  mean.assign(d, 0);
  scale.assign(d, 1);
  for (size_t k = 0; k < d; ++k) {
    double sum = 0, sq = 0;
    for (const auto& r : rows) sum += r[k];
    mean[k] = sum / double(rows.size());
    for (const auto& r : rows) sq += (r[k] - mean[k]) * (r[k] - mean[k]);
    const double sd = std::sqrt(sq / double(rows.size()));
    scale[k] = sd > 1e-6 ? sd : 1.0;
  }
}

GraphBatch batchOf(const std::vector<const LayerGraph*>& graphs, const std::vector<double>& mean,
                   const std::vector<double>& scale) {
  std::vector<std::vector<float>> rows;
  std::vector<int64_t> src, dst, graphOf;
  std::vector<float> inDeg, outDeg, count;
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    const LayerGraph& g = *graphs[gi];
    TL_REQUIRE(!g.nodes.empty(), "graph network: a run's model has an empty layer graph");
    const int64_t base = int64_t(rows.size());
    for (const auto& n : g.nodes) {
      rows.push_back(nodeFeatures(n));
      graphOf.push_back(int64_t(gi));
      inDeg.push_back(0);
      outDeg.push_back(0);
    }
    for (const auto& [from, to] : g.edges) {
      src.push_back(base + from);
      dst.push_back(base + to);
      ++outDeg[size_t(base + from)];
      ++inDeg[size_t(base + to)];
    }
    count.push_back(float(g.nodes.size()));
  }
  GraphBatch b;
  b.graphs = int64_t(graphs.size());
  b.x = standardised(rows, mean, scale);
  const auto longs = [](std::vector<int64_t>& v) { return at::tensor(v, at::kLong); };
  const auto inverse = [](std::vector<float>& v) {
    return (1.0 / at::tensor(v, at::kFloat).clamp_min(1.0)).unsqueeze(1);
  };
  b.src = longs(src);
  b.dst = longs(dst);
  b.graphOf = longs(graphOf);
  b.inverseInDegree = inverse(inDeg);
  b.inverseOutDegree = inverse(outDeg);
  b.inverseNodeCount = inverse(count);
  return b;
}

std::vector<float> jobFeatures(const JobShape& s, const ModelTrace& t) {
  const double n = double(s.processes);
  return {float(std::log(double(s.batch))),
          float(n),
          float(2.0 * (n - 1.0) / n),
          s.reduction == "exact" ? 1.0f : 0.0f,
          s.device == "cuda" ? 1.0f : 0.0f,
          float(std::log(double(s.computeThreads))),
          float(std::log(double(s.estsPerProcess))),
          float(std::log1p(gradientTrafficBytes(s, t))),
          float(std::log1p(double(t.graph.totalParameters()))),
          float(std::log1p(double(t.graph.totalFlops()))),
          float(std::log1p(double(t.graph.totalOutputElements()))),
          float(std::log(double(std::max<size_t>(1, t.graph.nodes.size()))))};
}

// Runs `body` on one intra-op thread (reproducible sums), restoring the caller's setting.
template <typename Body>
auto onOneThread(Body body) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  struct Restore {
    int n;
    ~Restore() { at::set_num_threads(n); }
  } restore{threads};
  return body();
}

}  // namespace

std::vector<std::string> gnnJobFeatureNames() {
  return {"log_batch", "processes", "ring_factor", "exact", "cuda", "log_threads", "log_ests_per_process",
          "log1p_traffic", "log1p_graph_parameters", "log1p_graph_flops",
          "log1p_graph_outputs", "log_graph_nodes"};
}

struct GnnPredictor::Net : torch::nn::Module {
  Net(int hidden, int rounds) {
    encode = register_module("encode", torch::nn::Linear(kNodeFeatures, hidden));
    for (int r = 0; r < rounds; ++r) {
      self.push_back(register_module("self" + std::to_string(r), torch::nn::Linear(hidden, hidden)));
      in.push_back(register_module("in" + std::to_string(r),
                                   torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false))));
      out.push_back(register_module("out" + std::to_string(r),
                                    torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false))));
    }
    const int jobs = int(gnnJobFeatureNames().size());
    head1 = register_module("head1", torch::nn::Linear(hidden + jobs, 64));
    head2 = register_module("head2", torch::nn::Linear(64, 12));
  }

  at::Tensor forward(const GraphBatch& b, const at::Tensor& job, const at::Tensor& graphOfExample) {
    at::Tensor h = at::relu(encode->forward(b.x));
    for (size_t r = 0; r < self.size(); ++r) {
      const at::Tensor fromProducers =
          at::zeros_like(h).index_add(0, b.dst, h.index_select(0, b.src)) * b.inverseInDegree;
      const at::Tensor fromConsumers =
          at::zeros_like(h).index_add(0, b.src, h.index_select(0, b.dst)) * b.inverseOutDegree;
      h = at::relu(self[r]->forward(h) + in[r]->forward(fromProducers) + out[r]->forward(fromConsumers));
    }
    const at::Tensor pooled =
        at::zeros({b.graphs, h.size(1)}, h.options()).index_add(0, b.graphOf, h) * b.inverseNodeCount;
    const at::Tensor z = at::cat({pooled.index_select(0, graphOfExample), job}, 1);
    return head2->forward(at::relu(head1->forward(z)));
  }

  torch::nn::Linear encode{nullptr}, head1{nullptr}, head2{nullptr};
  std::vector<torch::nn::Linear> self, in, out;
};

GnnPredictor GnnPredictor::fit(const std::vector<Example>& examples, const GnnOptions& options) {
  TL_REQUIRE(examples.size() >= 2, "fitting the graph network needs at least 2 runs, got ", examples.size());
  TL_REQUIRE(options.hidden >= 1 && options.rounds >= 0 && options.epochs >= 1 && options.learningRate > 0,
             "graph network: hidden, epochs and learning rate must be positive, rounds not negative");
  GnnPredictor p;
  p.options_ = options;
  std::vector<const LayerGraph*> graphs;
  std::vector<int64_t> graphOfExample;
  std::vector<std::vector<float>> nodeRows, jobRows, targetRows;
  for (const Example& e : examples) {
    TL_REQUIRE(!e.trace.graph.nodes.empty(), "graph network: the run of ", modelKey(e.shape.model),
               " has no layer graph (trace the model first)");
    size_t g = 0;
    while (g < graphs.size() && !sameGraph(*graphs[g], e.trace.graph)) ++g;
    if (g == graphs.size()) {
      graphs.push_back(&e.trace.graph);
      for (const auto& n : e.trace.graph.nodes) nodeRows.push_back(nodeFeatures(n));
    }
    graphOfExample.push_back(int64_t(g));
    jobRows.push_back(jobFeatures(e.shape, e.trace));
    std::vector<float> y(12);
    for (size_t m = 0; m < 12; ++m) y[m] = float(std::log(e.measured[m] + logFloor(m)));
    targetRows.push_back(y);
  }
  fitStandardisation(nodeRows, p.nodeMean_, p.nodeScale_);
  fitStandardisation(jobRows, p.jobMean_, p.jobScale_);
  fitStandardisation(targetRows, p.targetMean_, p.targetScale_);
  p.targetLow_.assign(12, 0);
  p.targetHigh_.assign(12, 0);
  for (size_t m = 0; m < 12; ++m) {
    p.targetLow_[m] = p.targetHigh_[m] = targetRows[0][m];
    for (const auto& y : targetRows) {
      p.targetLow_[m] = std::min(p.targetLow_[m], double(y[m]));
      p.targetHigh_[m] = std::max(p.targetHigh_[m], double(y[m]));
    }
  }
  const GraphBatch batch = batchOf(graphs, p.nodeMean_, p.nodeScale_);
  const at::Tensor job = standardised(jobRows, p.jobMean_, p.jobScale_);
  const at::Tensor target = standardised(targetRows, p.targetMean_, p.targetScale_);
  const at::Tensor which = at::tensor(graphOfExample, at::kLong);
  p.trainingLoss_ = onOneThread([&] {
    at::manual_seed(options.seed);
    p.net_ = std::make_shared<Net>(options.hidden, options.rounds);
    torch::optim::Adam adam(p.net_->parameters(),
                            torch::optim::AdamOptions(options.learningRate).weight_decay(options.weightDecay));
    double last = 0;
    for (int epoch = 0; epoch < options.epochs; ++epoch) {
      adam.zero_grad();
      const at::Tensor loss = (p.net_->forward(batch, job, which) - target).pow(2).mean();
      loss.backward();
      adam.step();
      last = loss.item<double>();
    }
    return last;
  });
  return p;
}

usage::TwelveMetrics GnnPredictor::predict(const JobShape& shape, const ModelTrace& trace) const {
  TL_REQUIRE(net_, "graph network: not fitted");
  TL_REQUIRE(!trace.graph.nodes.empty(), "graph network: the model of ", modelKey(shape.model),
             " has no layer graph");
  const GraphBatch batch = batchOf({&trace.graph}, nodeMean_, nodeScale_);
  const at::Tensor job = standardised({jobFeatures(shape, trace)}, jobMean_, jobScale_);
  const at::Tensor out = onOneThread([&] {
    at::NoGradGuard noGrad;
    return net_->forward(batch, job, at::zeros({1}, at::kLong)).contiguous();
  });
  usage::TwelveMetrics m{};
  const float* y = out.data_ptr<float>();
  for (size_t k = 0; k < 12; ++k)
    m[k] = std::max(0.0, std::exp(std::clamp(double(y[k]) * targetScale_[k] + targetMean_[k], targetLow_[k],
                                             targetHigh_[k])) -
                             logFloor(k));
  return m;
}

nlohmann::json GnnPredictor::toJson() const {
  TL_REQUIRE(net_, "graph network: not fitted");
  nlohmann::json j;
  j["kind"] = kGnnKind;
  j["hidden"] = options_.hidden;
  j["rounds"] = options_.rounds;
  j["epochs"] = options_.epochs;
  j["learning_rate"] = options_.learningRate;
  j["weight_decay"] = options_.weightDecay;
  j["seed"] = options_.seed;
  j["training_loss"] = trainingLoss_;
  j["job_features"] = gnnJobFeatureNames();
  j["node_mean"] = nodeMean_;
  j["node_scale"] = nodeScale_;
  j["job_mean"] = jobMean_;
  j["job_scale"] = jobScale_;
  j["target_mean"] = targetMean_;
  j["target_scale"] = targetScale_;
  j["target_low"] = targetLow_;
  j["target_high"] = targetHigh_;
  for (const auto& item : net_->named_parameters()) {
    const at::Tensor t = item.value().detach().contiguous();
    j["parameters"][item.key()] = {
        {"shape", t.sizes().vec()},
        {"values", std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel())}};
  }
  return j;
}

GnnPredictor GnnPredictor::fromJson(const nlohmann::json& j) {
  GnnPredictor p;
  try {
    TL_REQUIRE(j.at("kind").get<std::string>() == kGnnKind, "graph network: the file is a '",
               j.at("kind").get<std::string>(), "' model, not '", kGnnKind, "'");
    p.options_.hidden = j.at("hidden").get<int>();
    p.options_.rounds = j.at("rounds").get<int>();
    p.options_.epochs = j.at("epochs").get<int>();
    p.options_.learningRate = j.at("learning_rate").get<double>();
    p.options_.weightDecay = j.at("weight_decay").get<double>();
    p.options_.seed = j.at("seed").get<uint64_t>();
    p.trainingLoss_ = j.at("training_loss").get<double>();
    TL_REQUIRE(p.options_.hidden >= 1 && p.options_.hidden <= 4096 && p.options_.rounds >= 0 &&
                   p.options_.rounds <= 64,
               "graph network: hidden ", p.options_.hidden, " or rounds ", p.options_.rounds, " out of range");
    const auto vec = [&](const char* key, size_t size) {
      auto v = j.at(key).get<std::vector<double>>();
      TL_REQUIRE(v.size() == size, "graph network: '", key, "' has ", v.size(), " values, expected ", size);
      return v;
    };
    p.nodeMean_ = vec("node_mean", kNodeFeatures);
    p.nodeScale_ = vec("node_scale", kNodeFeatures);
    p.jobMean_ = vec("job_mean", gnnJobFeatureNames().size());
    p.jobScale_ = vec("job_scale", gnnJobFeatureNames().size());
    p.targetMean_ = vec("target_mean", 12);
    p.targetScale_ = vec("target_scale", 12);
    p.targetLow_ = vec("target_low", 12);
    p.targetHigh_ = vec("target_high", 12);
    p.net_ = std::make_shared<Net>(p.options_.hidden, p.options_.rounds);
    at::NoGradGuard noGrad;
    for (auto& item : p.net_->named_parameters()) {
      const auto& e = j.at("parameters").at(item.key());
      const auto shape = e.at("shape").get<std::vector<int64_t>>();
      auto values = e.at("values").get<std::vector<float>>();
      TL_REQUIRE(shape == item.value().sizes().vec() && int64_t(values.size()) == item.value().numel(),
                 "graph network: parameter '", item.key(), "' does not have the shape of the network");
      item.value().copy_(at::from_blob(values.data(), {int64_t(values.size())}, at::kFloat).view(shape));
    }
  } catch (const nlohmann::json::exception& e) {
    inputError("graph network: ", e.what());
  }
  return p;
}

std::string learnedModelKind(const nlohmann::json& j) {
  const std::string kind = j.is_object() ? j.value("kind", std::string()) : std::string();
  if (kind == kGnnKind) return "gnn";
  if (kind == kRidgeKind) return "ridge";
  inputError("learned model: unknown kind '", kind, "' (expected '", kGnnKind, "' or '", kRidgeKind, "')");
}

}  // namespace tl::predict
