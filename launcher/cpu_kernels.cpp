#include "launcher/cpu_kernels.h"

#include <cstdlib>

namespace tl {

std::string cpuKernels() {
  std::string kind = "baseline";
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    kind = "avx512";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    kind = "avx2";
  }
#endif
  std::string caps;
  for (const char* name : {"DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    caps += std::string(caps.empty() ? "" : ", ") + name + "=" + value;
  }
  return caps.empty() ? kind : kind + " (" + caps + ")";
}

}  // namespace tl
