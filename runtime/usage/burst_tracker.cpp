#include "runtime/usage/burst_tracker.h"

#include "common/check.h"

namespace tl::usage {

void BurstTracker::closeIdle(Totals& t, double length) const {
  if (length <= 0) return;
  t.idle += length;
  ++t.idleCount;
}

void BurstTracker::add(double t0, double t1, double value) {
  TL_CHECK(t1 >= t0, "BurstTracker: interval ends before it starts (", t0, " > ", t1, ")");
  if (!started_) {
    started_ = true;
    spanStart_ = end_ = idleStart_ = t0;
  }
  if (t0 < end_) t0 = end_;  // overlapping intervals: keep time monotonic
  if (t1 < t0) t1 = t0;
  end_ = t1;  // an empty interval after a gap extends the span to t0 (idle)
  // Idle: extends the idle run that started at idleStart_ (after a burst: burstEnd_).
  if (t1 == t0 || value <= threshold_) return;
  // Active. The idle run before it is [idleStart_, t0) when no burst is open, or
  // [burstEnd_, t0) after the open burst.
  if (inBurst_) {
    const double gap = t0 - burstEnd_;
    if (gap >= minIdle_ && gap > 0) {
      done_.burst += burstEnd_ - burstStart_;
      done_.weighted += burstWeighted_;
      ++done_.burstCount;
      closeIdle(done_, gap);
      burstStart_ = t0;
      burstWeighted_ = 0;
    }
  } else {
    closeIdle(done_, t0 - idleStart_);
    inBurst_ = true;
    burstStart_ = t0;
    burstWeighted_ = 0;
  }
  burstEnd_ = t1;
  burstWeighted_ += value * (t1 - t0);
}

BurstFigures BurstTracker::figures() const {
  Totals t = done_;
  if (inBurst_) {
    t.burst += burstEnd_ - burstStart_;
    t.weighted += burstWeighted_;
    ++t.burstCount;
    closeIdle(t, end_ - burstEnd_);
  } else if (started_) {
    closeIdle(t, end_ - idleStart_);
  }
  BurstFigures f;
  f.idlePeriods = t.idleCount;
  f.bursts = t.burstCount;
  f.idleSeconds = t.idleCount ? t.idle / double(t.idleCount) : 0;
  f.burstSeconds = t.burstCount ? t.burst / double(t.burstCount) : 0;
  f.burstConsumption = t.burst > 0 ? t.weighted / t.burst : 0;
  f.spanSeconds = started_ ? end_ - spanStart_ : 0;
  return f;
}

}  // namespace tl::usage
