// A TorchScript module (torch.jit.script(model).save(path) in Python) as a tl model.
//
// The module's parameters and buffers are registered, as the same tensors, in a tree of
// torch::nn::Modules mirroring the module's, so parameters(), buffers() and stateDict() give
// them in PyTorch's state_dict order and everything that trains a built-in model (optimizer,
// reducer, buffer resets, checkpoints, params_sha256) trains this one. forward runs the
// module's graph without the graph executor's optimisations: autograd records the same ops
// as PyTorch's eager mode, and randomness (dropout) draws from libtorch's default generators,
// which each EST swaps in as for the built-in models. train()/eval() reach the module.
#pragma once

#include <memory>
#include <string>

#include "runtime/models/model.h"

namespace tl::models {

// Reads config.file, checks its SHA-256 against config.fileSha256 (when set) and loads it.
// InputError naming the file for one that cannot be read, whose hash differs from the job's
// (both hashes), that is not TorchScript (a pickled state dict, a text file, a truncated or
// damaged archive), or that has no trainable parameter.
std::shared_ptr<Model> loadTorchScriptModel(const ModelConfig& config);

// The SHA-256 of the file at `path` as hex; InputError naming `flag` and the path if unreadable.
std::string fileSha256(const std::string& path, const std::string& flag);

// The signature of a TorchScript model's forward ("forward(Tensor x) -> Tensor"); empty for a
// built-in model.
std::string forwardSignature(const Model& model);

// Writes a TorchScript model, with its current parameters and buffers, as a TorchScript
// archive (torch.jit.load-able) at `path`, atomically. False (nothing written) for a built-in
// model; InputError naming the path if it cannot be written.
bool saveTorchScript(const Model& model, const std::string& path);

// Where --save-model PATH puts the TorchScript module beside the state dict at PATH:
// "out/m.pt" -> "out/m.torchscript.pt" (PATH + ".torchscript.pt" when it does not end in .pt).
std::string torchScriptSavePath(const std::string& stateDictPath);

}  // namespace tl::models
