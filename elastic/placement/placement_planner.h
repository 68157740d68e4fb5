// PlacementPlanner: how many ESTs each process should run, given how fast each process computes
// one EST and how much memory one more EST costs it. Torch-free (tl_planner), so it can be
// tested exhaustively in milliseconds and used by tools that do not train.
//
// The problem is makespan minimisation on uniform machines with identical jobs: choose integer
// n_g (lo_g <= n_g <= cap_g, sum n_g = N) minimising max_g n_g * t_g, where t_g is process g's
// compute seconds per EST and cap_g = floor(limit_g / m_g) its memory bound. It is solved
// exactly: the optimum is one of the candidate makespans k * t_g, and whether a makespan T is
// reachable is monotone in T (sum_g min(cap_g, floor(T / t_g)) >= N), so a binary search over
// the sorted candidates finds the least one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::elastic {

struct ProcessSpeed {
  double secondsPerEst = 0;     // t_g: forward + backward of one EST's micro-batch, > 0
  double bytesPerEst = 0;       // m_g: marginal memory of one more EST, >= 0 (0: no bound)
  double memoryLimitBytes = 0;  // what ESTs may use on this process; <= 0: no limit
};

struct PlacementPlan {
  std::vector<int> counts;     // n_g, in rank order
  double stepSeconds = 0;      // the predicted makespan max n_g * t_g
  double idealStepSeconds = 0; // N / sum(1 / t_g): the fractional lower bound, for reports
};

// The best placement of `logicalWorkers` ESTs over the processes; every process gets at least
// `minimumPerProcess` (1 in a running job: a process without an EST cannot be measured).
// Among the placements whose makespan is within `slack` (a fraction) of the least, it returns
// one that moves the fewest ESTs away from `current` (ESTs per process now; empty: none yet,
// then the load is spread as evenly as the speeds allow), so a re-plan never moves more than it
// must, nor for a difference smaller than the measurements' noise. With slack 0 the makespan
// is the least. InputError when the input is invalid (naming the process and the value) or
// when the memory limits cannot hold N ESTs. Deterministic (same input, same plan).
PlacementPlan planPlacement(const std::vector<ProcessSpeed>& processes, int logicalWorkers,
                            int minimumPerProcess = 1, const std::vector<int>& current = {},
                            double slack = 0);

// ESTs that change process going from `from` to `to` (the sum of the increases).
int estsMoved(const std::vector<int>& from, const std::vector<int>& to);

// max_g counts[g] * t_g: the step time a placement is predicted to take.
double predictedStepSeconds(const std::vector<int>& counts, const std::vector<ProcessSpeed>& processes);

// The most ESTs process g can hold under its memory limit (INT32_MAX-ish when unbounded).
int64_t estCapacity(const ProcessSpeed& process);

}  // namespace tl::elastic
