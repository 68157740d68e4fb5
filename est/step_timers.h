// Where the time of an epoch went, accumulated step by step.
#pragma once

#include <chrono>
#include <cstdint>

#include "runtime/train/step.h"

namespace tl::est {

struct EpochTimers {
  using Clock = std::chrono::steady_clock;
  double dataWait = 0;  // training waited for the loader
  double compute = 0;   // forward, backward, optimizer
  double comm = 0;      // gradient reduction, buffer broadcast, metrics allreduce
  Clock::time_point start = Clock::now();
  train::BatchStats stats;  // summed over all logical workers
  int64_t steps = 0;
};

inline double secondsBetween(EpochTimers::Clock::time_point a, EpochTimers::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace tl::est
