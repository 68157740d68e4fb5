#include "runtime/usage/nvml.h"

#include <dlfcn.h>

namespace tl::usage {
namespace {

// The few NVML types and entry points used, as nvml.h declares them (stable C ABI).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr NvmlReturn kNvmlSuccess = 0;

}  // namespace

struct Nvml::Api {
  void* library = nullptr;
  NvmlDevice device = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*handleByIndex)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
};

std::unique_ptr<Nvml> Nvml::open(int deviceIndex, std::string* why) {
  auto api = std::make_unique<Api>();
  api->library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!api->library) {
    if (why) *why = "libnvidia-ml.so.1 not found";
    return nullptr;
  }
  auto sym = [&](const char* name) { return ::dlsym(api->library, name); };
  api->init = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlInit_v2"));
  api->shutdown = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlShutdown"));
  api->handleByIndex = reinterpret_cast<NvmlReturn (*)(unsigned int, NvmlDevice*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  api->utilization = reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlUtilization*)>(sym("nvmlDeviceGetUtilizationRates"));
  api->memory = reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlMemory*)>(sym("nvmlDeviceGetMemoryInfo"));
  if (!api->init || !api->shutdown || !api->handleByIndex || !api->utilization || !api->memory) {
    if (why) *why = "libnvidia-ml.so.1 lacks an entry point tl needs";
    ::dlclose(api->library);
    return nullptr;
  }
  if (api->init() != kNvmlSuccess) {
    if (why) *why = "nvmlInit failed";
    ::dlclose(api->library);
    return nullptr;
  }
  if (api->handleByIndex(unsigned(deviceIndex), &api->device) != kNvmlSuccess) {
    if (why) *why = "NVML cannot open GPU " + std::to_string(deviceIndex);
    api->shutdown();
    ::dlclose(api->library);
    return nullptr;
  }
  std::unique_ptr<Nvml> nvml(new Nvml());
  nvml->api_ = std::move(api);
  return nvml;
}

Nvml::~Nvml() {
  if (!api_) return;
  api_->shutdown();
  ::dlclose(api_->library);
}

std::optional<GpuReading> Nvml::read() const {
  NvmlUtilization u{};
  NvmlMemory m{};
  if (api_->utilization(api_->device, &u) != kNvmlSuccess) return std::nullopt;
  if (api_->memory(api_->device, &m) != kNvmlSuccess) return std::nullopt;
  return GpuReading{double(u.gpu) / 100.0, int64_t(m.used)};
}

}  // namespace tl::usage
