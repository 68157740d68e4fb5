// State dict files that PyTorch reads: torch.load(path) gives a dict name -> tensor in
// stateDict() order, ready for model.load_state_dict(...) on the PyTorch definition of the
// same architecture (see model.h for the naming).
#pragma once

#include <string>

#include <torch/nn/module.h>

namespace tl::models {

// Writes stateDict(module) in torch.save's zip format, tensors detached and on the CPU,
// atomically (readers never see a half-written file). InputError naming the path on failure.
void saveStateDict(const torch::nn::Module& module, const std::string& path);

// Copies a file written by saveStateDict (or torch.save of a state dict) into `module`. The
// names, shapes and dtypes must match the module's state dict exactly; otherwise InputError
// naming the path and the first mismatch, and the module is left unchanged.
void loadStateDict(torch::nn::Module& module, const std::string& path);

}  // namespace tl::models
