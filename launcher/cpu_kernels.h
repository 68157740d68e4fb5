// Which vector-instruction kernels this machine's CPU math runs: part of a CPU job's bits.
// oneDNN (convolutions) and ATen pick their kernels by the CPU's instruction set when they
// start, and kernels of different width add in different orders: a CNN trained on a machine
// with AVX-512 gives other bits than on one with AVX2 only (seen: the golden jobs' hashes). So a
// CPU job's bits are a function of its kernel class too, like the libtorch version and
// --compute-threads, and a job whose processes run different classes depends on its placement.
// Torch-free: read from the CPU and the environment variables that cap the libraries' choice.
#pragma once

#include <string>

namespace tl {

// "avx512" (AVX-512 F, BW, VL and DQ: oneDNN's avx512_core), "avx2" (AVX2 and FMA), or
// "baseline" (neither). When DNNL_MAX_CPU_ISA/ONEDNN_MAX_CPU_ISA or ATEN_CPU_CAPABILITY is set,
// the class is followed by them, e.g. "avx512 (DNNL_MAX_CPU_ISA=AVX2)": such a cap can make two
// classes compute alike, and no table of bits can assume it does.
std::string cpuKernels();

}  // namespace tl
