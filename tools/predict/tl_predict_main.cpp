// tl-predict: the twelve resource metrics of a job before it runs (runtime/usage), from its
// configuration: the analytic baseline and, with --learned, a model fitted on recorded runs (the
// graph network or the ridge regression; the file says which, and carries the calibration the
// analytic column then uses).
//   tl-predict --processes 2 [--learned model.json] [--json] -- <tl-launch flags of the job>
//   tl-predict --model resnet --depth 20 --batch 32 --processes 2 [--learned model.json] [--json]
//   tl-predict fit --dataset runs.jsonl --out model.json [--kind gnn|ridge]
//   tl-predict evaluate --dataset runs.jsonl --holdout resnet-14,mlp
//   tl-predict profile --name resnet20 --kind cpu --gpus 1,2,4 --model resnet --depth 20  (tl-sim CSV)
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "common/check.h"
#include "common/files.h"
#include "common/cli/cli.h"
#include "tools/predict/calibration.h"
#include "tools/predict/evaluation.h"
#include "tools/predict/launch_shape.h"
#include "tools/predict/sim_profile.h"

namespace {

using namespace tl;

constexpr const char* kProgram = "tl-predict";

void addShapeFlags(CLI::App& app, predict::JobShape& s, double& gbps, std::string& learned, bool& json) {
  app.add_option("--model", s.model.arch, "model architecture (cnn, mlp, resnet, resnet18, shufflenetv2)")
      ->capture_default_str();
  cli::addInt(app, "--depth", &s.model.depth, "depth of the CIFAR ResNet (6n+2)", 0, 1000);
  cli::addInt(app, "--batch", &s.batch, "batch per logical worker", 1, 1 << 20);
  cli::addInt(app, "--processes", &s.processes, "N: processes (one logical worker each)", 1, 4096);
  cli::addInt(app, "--ests-per-process", &s.estsPerProcess, "logical workers per process", 1, 4096);
  cli::addInt(app, "--steps", &s.steps, "optimizer steps of the job", 1);
  app.add_option("--reduction", s.reduction, "exact | fp32")->capture_default_str();
  app.add_option("--optimizer", s.optimizer, "sgd | adam")->capture_default_str();
  app.add_option("--device", s.device, "cpu | cuda")->capture_default_str();
  cli::addInt(app, "--compute-threads", &s.computeThreads, "intra-op threads per process", 1, 256);
  cli::addDouble(app, "--bandwidth-gbps", &gbps, "link bandwidth between processes, GB/s", 1e-6);
  app.add_option("--learned", learned, "a learned model written by `tl-predict fit`");
  app.add_flag("--json", json, "print JSON (for tl-sim and scripts) instead of a table");
}

// A fitted model of either kind and the calibration saved with it.
struct Learned {
  std::optional<predict::LearnedPredictor> ridge;
  std::optional<predict::GnnPredictor> gnn;
  predict::Calibration calibration;

  usage::TwelveMetrics predict(const predict::JobShape& s, const predict::ModelTrace& t) const {
    return gnn ? gnn->predict(s, t) : ridge->predict(s, t);
  }
  const char* name() const { return gnn ? "gnn" : "ridge"; }
};

Learned readLearned(const std::string& path) {
  std::ifstream in(path);
  TL_REQUIRE(in, "--learned: cannot read '", path, "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    inputError("--learned '", path, "': not JSON: ", e.what());
  }
  Learned out;
  if (predict::learnedModelKind(j) == "gnn") out.gnn = predict::GnnPredictor::fromJson(j);
  else out.ridge = predict::LearnedPredictor::fromJson(j);
  if (j.contains("calibration")) out.calibration = predict::calibrationFromJson(j.at("calibration"));
  return out;
}

std::set<std::string> splitHoldout(const std::string& text) {
  std::set<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    TL_REQUIRE(!item.empty(), "--holdout: empty model name in '", text, "'");
    out.insert(item);
  }
  TL_REQUIRE(!out.empty(), "--holdout: name at least one model (e.g. resnet-14,mlp)");
  return out;
}

// tl-predict's own job flags, which a job described after `--` replaces.
constexpr const char* kShapeFlags[] = {"--model",     "--depth",     "--batch",  "--ests-per-process",
                                       "--steps",     "--reduction", "--optimizer", "--device",
                                       "--compute-threads"};

int runPredict(const predict::JobShape& shape, const std::string& learnedPath, bool json,
               const std::vector<std::string>& unmodelled) {
  predict::validate(shape);
  std::optional<Learned> learned;
  if (!learnedPath.empty()) learned = readLearned(learnedPath);
  const predict::ModelTrace trace = predict::traceModel(shape.model, shape.batch, shape.computeThreads);
  const usage::TwelveMetrics analytic =
      predict::analyticPrediction(shape, trace, learned ? learned->calibration : predict::Calibration{});
  usage::TwelveMetrics fitted{};
  if (learned) fitted = learned->predict(shape, trace);
  if (json) {
    nlohmann::json j = {{"shape", predict::toJson(shape)}, {"trace", predict::toJson(trace)}};
    for (size_t m = 0; m < 12; ++m) {
      j["analytic"][usage::kMetricNames[m]] = analytic[m];
      if (learned) j["learned"][usage::kMetricNames[m]] = fitted[m];
    }
    if (!unmodelled.empty()) j["not_modelled"] = unmodelled;
    if (learned) {
      j["learned_kind"] = learned->name();
      j["calibration"] = predict::toJson(learned->calibration);
    }
    std::printf("%s\n", j.dump(2).c_str());
    return cli::kExitOk;
  }
  std::printf("%s, %lld parameters, activation peak %.1f MB, pass %.4f s at batch %lld\n",
              predict::modelKey(shape.model).c_str(), (long long)trace.parameters,
              double(trace.activationPeakBytes) / 1048576.0, trace.forwardBackwardSeconds, (long long)shape.batch);
  std::printf("%-20s %14s %14s\n", "metric", "analytic", learned ? learned->name() : "");
  for (size_t m = 0; m < 12; ++m) {
    if (learned) std::printf("%-20s %14.6g %14.6g\n", usage::kMetricNames[m], analytic[m], fitted[m]);
    else std::printf("%-20s %14.6g\n", usage::kMetricNames[m], analytic[m]);
  }
  return cli::kExitOk;
}

int runMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc), launchArgs;
  const auto dashes = std::find(args.begin(), args.end(), "--");
  const bool launchFlags = dashes != args.end();
  if (launchFlags) {
    launchArgs.assign(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }
  auto app = cli::makeApp(kProgram, "Predicts the twelve resource metrics of a tl job before it runs.");
  app->footer(
      "A job as tl-launch would run it: tl-predict --processes P [--learned M] [--json] -- <tl-launch "
      "flags>\n(parsed by tl-launch's own flag table; flags the prediction leaves out are named). The "
      "shape flags above (--model ... --compute-threads) describe a job without tl-launch's flags.");
  predict::JobShape shape;
  shape.model.arch = "cnn";
  std::string learnedPath;
  bool json = false;
  double gbps = shape.bandwidthBytesPerSecond / 1e9;
  addShapeFlags(*app, shape, gbps, learnedPath, json);
  std::string dataset, out, holdout, kind = "gnn";
  predict::GnnOptions gnn;
  CLI::App* fit = app->add_subcommand("fit", "fit a learned model (and the analytic calibration) on recorded runs");
  fit->add_option("--kind", kind, "gnn (graph network on the layer graph) | ridge (regression on graph totals)")
      ->capture_default_str();
  fit->add_option("--dataset", dataset, "runs recorded by bench/predict_dataset.sh (JSON lines)")->required();
  fit->add_option("--out", out, "where to write the learned model (JSON)")->required();
  CLI::App* evaluate = app->add_subcommand("evaluate", "MAPE per metric on held-out models");
  for (CLI::App* sub : {fit, evaluate}) {
    cli::addInt(*sub, "--gnn-hidden", &gnn.hidden, "graph network: width of the node states", 1, 4096);
    cli::addInt(*sub, "--gnn-rounds", &gnn.rounds, "graph network: rounds of message passing", 0, 64);
    cli::addInt(*sub, "--gnn-epochs", &gnn.epochs, "graph network: full-batch Adam steps", 1, 1000000);
  }
  evaluate->add_option("--dataset", dataset, "runs recorded by bench/predict_dataset.sh (JSON lines)")->required();
  evaluate->add_option("--holdout", holdout, "models left out of fitting, e.g. resnet-14,mlp")->required();
  std::string profileName, profileKind, profileGpus = "1,2,4,8";
  CLI::App* profile = app->add_subcommand("profile", "tl-sim profile rows (model,kind,gpus,samples_per_s) of the job's model");
  profile->add_option("--name", profileName, "the model's name in tl-sim's traces, e.g. resnet20")->required();
  profile->add_option("--kind", profileKind, "the device kind, e.g. cpu or fast")->required();
  profile->add_option("--gpus", profileGpus, "device counts, comma-separated")->capture_default_str();
  profile->fallthrough();  // the job shape flags (--model, --batch, ...) before or after `profile`
  if (!cli::parse(*app, args)) return cli::kExitOk;
  shape.bandwidthBytesPerSecond = gbps * 1e9;
  std::vector<std::string> unmodelled;
  if (launchFlags) {
    TL_REQUIRE(!fit->parsed() && !evaluate->parsed(),
               "`--`: tl-launch flags describe the job of a prediction or a profile, not of fit or evaluate");
    for (const char* flag : kShapeFlags) {
      TL_REQUIRE(app->get_option(flag)->count() == 0, flag,
                 ": the job is described after `--`, in tl-launch's flags; give it there");
    }
    const bool processesGiven = app->get_option("--processes")->count() > 0;
    predict::LaunchShape launched =
        predict::shapeFromLaunchFlags(launchArgs, processesGiven ? shape.processes : 0);
    launched.shape.bandwidthBytesPerSecond = shape.bandwidthBytesPerSecond;
    shape = launched.shape;
    unmodelled = launched.unmodelled;
    if (!unmodelled.empty())
      std::fprintf(stderr, "%s: %s\n", kProgram, predict::unmodelledLine(unmodelled).c_str());
  }
  if (fit->parsed()) {
    TL_REQUIRE(kind == "gnn" || kind == "ridge", "--kind: unknown value '", kind, "' (expected gnn or ridge)");
    const auto runs = predict::readDataset(dataset);
    nlohmann::json model = kind == "gnn" ? predict::GnnPredictor::fit(runs, gnn).toJson()
                                         : predict::LearnedPredictor::fit(runs).toJson();
    model["calibration"] = predict::toJson(predict::calibrate(runs));
    writeFileAtomic(out, model.dump(2) + "\n");
    std::printf("%s: %s fitted on %zu runs, written to %s\n", kProgram, kind.c_str(), runs.size(), out.c_str());
    return cli::kExitOk;
  }
  if (evaluate->parsed()) {
    const auto held = splitHoldout(holdout);
    const auto runs = predict::readDataset(dataset);
    const auto errors = predict::evaluateHeldOut(runs, held, gnn);
    std::vector<predict::Example> train;
    for (const auto& e : runs)
      if (!held.count(predict::modelKey(e.shape.model))) train.push_back(e);
    std::printf("held out: %s (%zu runs in the dataset)\nanalytic calibration from the training runs: %s\n%s",
                holdout.c_str(), runs.size(), predict::toJson(predict::calibrate(train)).dump().c_str(),
                predict::errorTable(errors).c_str());
    return cli::kExitOk;
  }
  if (profile->parsed()) {
    predict::validate(shape);
    const auto gpus = cli::parseIntList(profileGpus, "--gpus");
    const auto trace = predict::traceModel(shape.model, shape.batch, shape.computeThreads);
    std::fputs(predict::simProfileCsv(shape, trace, profileName, profileKind, gpus).c_str(), stdout);
    return cli::kExitOk;
  }
  return runPredict(shape, learnedPath, json, unmodelled);
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return runMain(argc, argv); });
}
