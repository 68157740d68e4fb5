// GPU utilisation and memory through NVML, loaded with dlopen at run time so that nothing links
// to the driver's library: on a machine without it (or without a GPU) open() says so and the
// recorder measures the CPU side instead.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tl::usage {

struct GpuReading {
  double utilisation = 0;  // fraction of the last sample period a kernel ran (NVML: 0..100 %)
  int64_t usedBytes = 0;   // device memory in use (all processes on the device)
};

class Nvml {
 public:
  // nullptr when libnvidia-ml.so.1 is missing or the device cannot be opened; `why` says which.
  static std::unique_ptr<Nvml> open(int deviceIndex, std::string* why);
  ~Nvml();
  std::optional<GpuReading> read() const;

 private:
  Nvml() = default;
  struct Api;
  std::unique_ptr<Api> api_;
};

}  // namespace tl::usage
