#include "launcher/cpu_kernels.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <string>

namespace {

// What /proc/cpuinfo's first "flags" line says of one flag (x86-64 Linux).
bool cpuinfoHas(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    return (line + " ").find(" " + flag + " ") != std::string::npos;
  }
  return false;
}

class CpuKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kCaps) unsetenv(name);
  }
  void TearDown() override { SetUp(); }
  static constexpr const char* kCaps[] = {"DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA",
                                          "ATEN_CPU_CAPABILITY"};
};

TEST_F(CpuKernels, ClassFollowsTheCpuFlags) {
#if defined(__x86_64__)
  const bool avx512 = cpuinfoHas("avx512f") && cpuinfoHas("avx512bw") && cpuinfoHas("avx512vl") &&
                      cpuinfoHas("avx512dq");
  const bool avx2 = cpuinfoHas("avx2") && cpuinfoHas("fma");
  EXPECT_EQ(tl::cpuKernels(), avx512 ? "avx512" : avx2 ? "avx2" : "baseline");
#else
  EXPECT_EQ(tl::cpuKernels(), "baseline");
#endif
}

TEST_F(CpuKernels, CapsFromTheEnvironmentAreNamed) {
  const std::string bare = tl::cpuKernels();
  setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
  EXPECT_EQ(tl::cpuKernels(), bare + " (DNNL_MAX_CPU_ISA=AVX2)");
  setenv("ATEN_CPU_CAPABILITY", "default", 1);
  EXPECT_EQ(tl::cpuKernels(), bare + " (DNNL_MAX_CPU_ISA=AVX2, ATEN_CPU_CAPABILITY=default)");
  setenv("DNNL_MAX_CPU_ISA", "", 1);  // empty: not a cap
  EXPECT_EQ(tl::cpuKernels(), bare + " (ATEN_CPU_CAPABILITY=default)");
}

}  // namespace
