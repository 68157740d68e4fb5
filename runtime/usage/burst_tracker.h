// Bursts and idle periods of one resource signal, and the three figures of each resource that
// the scheduler wants (after Driple): the average idle duration, the average burst duration and
// the average consumption during a burst.
//
// The signal arrives as contiguous intervals [t0, t1) with a constant value (a utilisation, a
// resident size, a byte rate). An interval is active when its value is above the tracker's
// threshold; runs of active intervals are bursts, runs of the others idle periods. An idle gap
// shorter than `minIdleSeconds` between two bursts joins them (back-to-back collectives are one
// burst of traffic, not many).
#pragma once

#include <cstdint>

namespace tl::usage {

// The three figures of one resource over some span of the run.
struct BurstFigures {
  double idleSeconds = 0;        // average idle period
  double burstSeconds = 0;       // average burst
  double burstConsumption = 0;   // time-weighted mean value during bursts
  int64_t idlePeriods = 0;
  int64_t bursts = 0;
  double spanSeconds = 0;        // time covered
};

class BurstTracker {
 public:
  explicit BurstTracker(double threshold, double minIdleSeconds = 0)
      : threshold_(threshold), minIdle_(minIdleSeconds) {}

  // Appends the interval [t0, t1) with `value`; intervals come in time order. A gap between
  // the previous interval's end and t0 counts as idle (value 0); an empty interval (t1 == t0)
  // just extends the span to t0.
  void add(double t0, double t1, double value);

  // The figures so far, counting the period in progress as if it ended now. Does not change
  // the tracker (later add() calls continue the same periods).
  BurstFigures figures() const;

  double threshold() const { return threshold_; }

 private:
  struct Totals {
    double idle = 0, burst = 0, weighted = 0;
    int64_t idleCount = 0, burstCount = 0;
  };
  void closeIdle(Totals& t, double length) const;

  double threshold_;
  double minIdle_;
  bool started_ = false;
  double end_ = 0;           // end of the last interval
  double spanStart_ = 0;
  Totals done_;              // completed periods
  // The period in progress: a burst (with its weighted sum) and possibly a trailing idle run
  // that a later burst may still absorb (when shorter than minIdle_).
  bool inBurst_ = false;
  double burstStart_ = 0, burstEnd_ = 0, burstWeighted_ = 0;
  double idleStart_ = 0;
};

}  // namespace tl::usage
