// The names of the model architectures, without libtorch: tools that only check a job's
// definition (tl-submit's job table) need the list but not the models. registry.cpp builds
// each of them and checks at first use that its table has exactly these names.
#pragma once

#include <string>
#include <vector>

namespace tl::models {

// The arch of a job whose model is a TorchScript file (--model-file), not one of the names below.
inline constexpr const char* kTorchScriptArch = "torchscript";

// In sorted order, as modelNames() (model.h) returns them.
inline std::vector<std::string> knownModelNames() {
  return {"cnn", "mlp", "resnet", "resnet18", "shufflenetv2"};
}

}  // namespace tl::models
