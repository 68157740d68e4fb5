#include "runtime/train/out_of_memory.h"

#include <c10/util/Exception.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/check.h"

namespace tl::train {
namespace {

// "... you tried to allocate 51539607552 bytes ..." (CPU) / "Tried to allocate 2.00 GiB" (CUDA).
size_t bytesInMessage(const std::string& message) {
  const std::string marker = "allocate ";
  size_t at = message.find(marker);
  // "can't allocate memory: you tried to allocate N bytes": the one followed by a number.
  while (at != std::string::npos &&
         !std::isdigit(static_cast<unsigned char>(message[at + marker.size()]))) {
    at = message.find(marker, at + 1);
  }
  if (at == std::string::npos) return 0;
  const char* number = message.c_str() + at + marker.size();
  char* end = nullptr;
  const double value = std::strtod(number, &end);
  if (end == number || value <= 0) return 0;
  const std::string unit(end, std::min<size_t>(4, std::strlen(end)));
  double scale = 1;
  if (unit.rfind(" KiB", 0) == 0) scale = 1024.0;
  if (unit.rfind(" MiB", 0) == 0) scale = 1024.0 * 1024;
  if (unit.rfind(" GiB", 0) == 0) scale = 1024.0 * 1024 * 1024;
  return size_t(value * scale);
}

bool saysOutOfMemory(const std::string& message) {
  for (const char* phrase : {"can't allocate memory", "not enough memory", "out of memory"}) {
    if (message.find(phrase) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::string humanBytes(size_t bytes) {
  char text[64];
  const double b = double(bytes);
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(text, sizeof text, "%.1f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(text, sizeof text, "%.1f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(text, sizeof text, "%zu bytes", bytes);
  }
  return text;
}

std::string describeModel(const models::ModelConfig& model) {
  if (!model.file.empty()) return tl::str("the model (TorchScript module '", model.file, "')");
  const std::string arch =
      model.arch == "resnet" ? tl::str("resnet, depth ", model.depth) : model.arch;
  return tl::str("the model (", arch, " for ", model.inChannels, "x", model.imageSize, "x",
                 model.imageSize, " inputs)");
}

std::optional<size_t> outOfMemoryBytes(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return size_t(0);
  if (const auto* c10Error = dynamic_cast<const c10::Error*>(&e)) {
    const std::string message = c10Error->what_without_backtrace();
    if (dynamic_cast<const c10::OutOfMemoryError*>(&e) || saysOutOfMemory(message))
      return bytesInMessage(message);
  }
  return std::nullopt;
}

void whileBuilding(const std::string& what, const std::function<void()>& build) {
  try {
    build();
  } catch (const std::exception& e) {
    std::optional<size_t> bytes = outOfMemoryBytes(e);
    if (!bytes) throw;
    inputError("out of memory building ", what, ": an allocation",
               *bytes > 0 ? " of " + humanBytes(*bytes) : std::string(), " failed");
  }
}

}  // namespace tl::train
