// Running out of memory while a job is put together is the user's problem to fix (a smaller
// model, batch or image size), so it is one line naming what was being built and how much it
// asked for, not libtorch's message with a C++ stack trace.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "runtime/models/model.h"

namespace tl::train {

// The bytes an allocator error says it tried to allocate, if `e` is an out-of-memory error of
// libtorch (c10::OutOfMemoryError, or its CPU allocator's "can't allocate memory" / "not enough
// memory") or std::bad_alloc (0: unknown size); nothing for any other error.
std::optional<size_t> outOfMemoryBytes(const std::exception& e);

// Runs `build`. When it runs out of memory: InputError
// "out of memory building <what>: an allocation of <N.N GiB> failed". Other errors pass through.
void whileBuilding(const std::string& what, const std::function<void()>& build);

// "the model (mlp for 3x4096x4096 inputs)": what whileBuilding names while a model is built.
std::string describeModel(const models::ModelConfig& model);

// "48.0 GiB", "512.0 MiB", "12 bytes".
std::string humanBytes(size_t bytes);

}  // namespace tl::train
