// Shared by the in-process throughput benchmarks (bench_loader, bench_jpeg): images/s together
// with how many CPUs the process really had while it ran.
#pragma once

#include <time.h>

namespace tl::bench {

inline double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct Measurement {
  double imagesPerSecond = 0;
  double cpusUsed = 0;  // process CPU time / wall time: below the thread count = machine busy
};

}  // namespace tl::bench
