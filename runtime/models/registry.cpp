// Model names, config validation and the createModel factory.
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "common/check.h"
#include "runtime/models/architectures.h"
#include "runtime/models/model.h"
#include "runtime/models/model_names.h"
#include "runtime/models/torchscript_model.h"

namespace tl::models {
namespace {

struct Architecture {
  std::function<std::shared_ptr<Model>(const ModelConfig&)> create;
  bool hasNoBatchNormVariant;
  bool hasDropout;
  int minImageSize;  // smaller inputs would pool away to nothing
};

const std::map<std::string, Architecture>& architectures() {
  static const std::map<std::string, Architecture> all = {
      {"cnn", {detail::createSmallCnn, true, true, 4}},
      {"mlp", {detail::createMlp, false, true, 1}},
      {"resnet", {detail::createCifarResNet, true, false, 1}},
      {"resnet18", {detail::createResNet18, true, false, 1}},
      {"shufflenetv2", {detail::createShuffleNetV2, false, false, 1}},
  };
  return all;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

void validateDepth(const ModelConfig& config) {
  if (config.arch != "resnet") {
    TL_REQUIRE(config.depth == 0, "--depth applies only to --model resnet (got --depth ",
               config.depth, " for --model ", config.arch, ")");
    return;
  }
  TL_REQUIRE(config.depth >= 8 && (config.depth - 2) % 6 == 0, "--model resnet: depth ",
             config.depth, " is not of the form 6n+2 with n >= 1 (e.g. 20, 32, 44, 56, 110)");
}

}  // namespace

std::vector<std::string> modelNames() {
  std::vector<std::string> names;
  for (const auto& entry : architectures()) names.push_back(entry.first);
  // Tools without libtorch check job tables against model_names.h: keep both lists in step.
  TL_CHECK(names == knownModelNames(),
           "runtime/models/model_names.h does not list the "
           "architectures of registry.cpp: ",
           joined(knownModelNames()), " vs ", joined(names));
  return names;
}

std::vector<std::string> lossNames() { return {"cross-entropy", "mse", "nll"}; }

torch::Tensor Model::forwardLoss(torch::Tensor, torch::Tensor) {
  TL_CHECK(false, "forwardLoss called on a model that does not return its loss");
  return {};
}

namespace {

void validateLoss(const ModelConfig& config) {
  const auto names = lossNames();
  TL_REQUIRE(std::find(names.begin(), names.end(), config.loss) != names.end(), "--loss: unknown value '",
             config.loss, "' (expected one of ", joined(names), ")");
  TL_REQUIRE(!config.returnsLoss || !config.file.empty(),
             "--model-returns loss applies to --model-file only (the built-in models output logits)");
  TL_REQUIRE(!config.returnsLoss || config.loss == "cross-entropy",
             "--loss applies to a model that outputs logits; with --model-returns loss the module computes its own");
}

}  // namespace

void validate(const ModelConfig& config) {
  validateLoss(config);
  if (config.arch == kTorchScriptArch || !config.file.empty()) {
    TL_REQUIRE(config.arch == kTorchScriptArch && !config.file.empty(),
               "give --model or --model-file, not both (--model ", config.arch, ", --model-file '",
               config.file, "')");
    TL_REQUIRE(config.depth == 0 && config.batchNorm && config.dropout < 0 && config.hiddenSizes.empty(),
               "--depth, --no-batchnorm and --dropout apply to the built-in models, not to --model-file '",
               config.file, "' (the module defines its own layers)");
    return;
  }
  auto it = architectures().find(config.arch);
  TL_REQUIRE(it != architectures().end(), "unknown model '", config.arch,
             "'; choose one of: ", joined(modelNames()));
  const Architecture& arch = it->second;
  validateDepth(config);
  TL_REQUIRE(config.numClasses >= 1, "--num-classes must be >= 1 (got ", config.numClasses, ")");
  TL_REQUIRE(config.inChannels >= 1, "input channels must be >= 1 (got ", config.inChannels, ")");
  TL_REQUIRE(config.imageSize >= arch.minImageSize, "--model ", config.arch,
             " needs images of at least ", arch.minImageSize, "x", arch.minImageSize, " (got ",
             config.imageSize, ")");
  TL_REQUIRE(config.batchNorm || arch.hasNoBatchNormVariant,
             "--no-batchnorm is not available for --model ", config.arch,
             ": BatchNorm is part of that architecture (variants exist for cnn, resnet, resnet18)");
  if (config.dropout >= 0) {
    TL_REQUIRE(config.dropout < 1, "--dropout must be in [0, 1) (got ", config.dropout, ")");
    TL_REQUIRE(arch.hasDropout || config.dropout == 0,
               "--dropout applies only to --model cnn and mlp (got ", config.dropout,
               " for --model ", config.arch, ")");
  }
  TL_REQUIRE(!std::isnan(config.dropout), "--dropout is NaN");
  TL_REQUIRE(config.arch == "mlp" || config.hiddenSizes.empty(),
             "hidden layer sizes apply only to --model mlp");
  for (int width : config.hiddenSizes)
    TL_REQUIRE(width >= 1, "--model mlp: hidden layer sizes must be >= 1 (got ", width, ")");
}

std::shared_ptr<Model> createModel(const ModelConfig& config) {
  validate(config);
  std::shared_ptr<Model> model = config.file.empty() ? architectures().at(config.arch).create(config)
                                                     : loadTorchScriptModel(config);
  model->setLoss(config.loss);
  return model;
}

}  // namespace tl::models
