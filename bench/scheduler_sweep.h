// bench_scheduler --sweep: every tl-sim policy against offered load (scheduler_sweep.cpp).
#pragma once

#include <string>

namespace tl::bench {

struct SweepOptions {
  double inplace = 0.3, restart = 8.8;  // rescale costs (s): tl's in-place pause, ckpt-restart
  int seeds = 3;
  double largeLoad = 1.3;  // the large preset runs at this one load only (for its time)
  bool large = true;
  std::string out;
};

// Prints the tables, writes OUT/load_sweep.csv and OUT/load_sweep_{4x,request}.png.
void runLoadSweep(const SweepOptions& options);

}  // namespace tl::bench
