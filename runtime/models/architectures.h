// Factories of the individual architectures (internal to runtime/models). The config has been
// validated by the registry before any of them is called.
#pragma once

#include <memory>

#include "runtime/models/model.h"

namespace tl::models::detail {

std::shared_ptr<Model> createResNet18(const ModelConfig& config);
std::shared_ptr<Model> createCifarResNet(const ModelConfig& config);
std::shared_ptr<Model> createShuffleNetV2(const ModelConfig& config);
std::shared_ptr<Model> createSmallCnn(const ModelConfig& config);
std::shared_ptr<Model> createMlp(const ModelConfig& config);

}  // namespace tl::models::detail
