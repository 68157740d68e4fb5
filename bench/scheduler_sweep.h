// bench_scheduler --sweep: tl's policy against every baseline over offered load
// (scheduler_sweep.cpp).
#pragma once

#include <string>
#include <vector>

namespace tl::bench {

struct SweepOptions {
  double inplace = 0.3;  // tl's in-place rescale pause (s): the cost every policy is charged
  int seeds = 3;         // seeds 1..N per point on pollux and easyscale
  int largeSeeds = 1;    // seeds 1..N per point on large (a run there takes seconds per policy)
  int firstSeed = 1;     // seeds count from here (a later run adds seeds to an earlier one)
  std::vector<double> loads{0.5, 0.8, 1.0, 1.3, 1.6, 2.0};
  std::vector<double> largeLoads{0.5, 0.8, 1.0, 1.3, 1.6, 2.0};
  std::vector<std::string> presets{"pollux", "easyscale", "large"};
  std::string out;
};

// Prints the tables and the verdict, writes OUT/load_sweep.csv, OUT/load_sweep_verdict.csv,
// OUT/load_sweep_verdict.png and OUT/load_sweep_queueing.png.
void runLoadSweep(const SweepOptions& options);

// The two plots from FROM/load_sweep.csv and FROM/load_sweep_verdict.csv (a sweep's, or a merge
// of several sweeps' rows), into OUT/load_sweep_{verdict,queueing}.png.
void plotLoadSweep(const std::string& from, const std::string& out);

}  // namespace tl::bench
