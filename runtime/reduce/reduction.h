// How gradients are summed across ESTs: part of a job's definition (runtime/job_config.h).
#pragma once

namespace tl {

// Exact: 64-bit fixed point, the same bits on every placement. Fp32: a float allreduce,
// faster, without that promise.
enum class Reduction { Exact, Fp32 };

inline const char* toString(Reduction reduction) { return reduction == Reduction::Exact ? "exact" : "fp32"; }

}  // namespace tl
