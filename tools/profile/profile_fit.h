// From the bursts of a worker sweep to a throughput model and a recommended worker count.
//
// Two ways to fit rate(w) = min(C, w / (a*w + b)):
//  - from loader measurements, when the bursts' summary.json carries them ("loader":
//    {workers, busy_s, images} and "compute_s"): each burst feeds ThroughputFitter one loader
//    window and one compute window of rank 0's process; the job's rate is that process's rate
//    times (logical workers / rank 0's ESTs).
//  - from images/s alone otherwise: C is the highest measured rate among bursts where the
//    loader was not the bottleneck (data wait share under 5%; infinite when there is none);
//    the bursts where it was are loader-bound, so t(w) = w / rate(w) = a*w + b, fitted by
//    least squares (one such burst: a = 0). No loader-bound burst: a = 0 and b such that the
//    smallest swept w > 0 already reaches C.
// Bursts with w = 0 (loading on the training thread) take no part in the fit; the model
// predicts them as 1 / (b + 1/C) (the thread loads, then computes).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "coordinator/throughput_model.h"
#include "tools/profile/burst.h"

namespace tl::profile {

struct ProfileFit {
  bool fitted = false;
  coordinator::ThroughputModel model;
  double jobScale = 1;  // job images/s = jobScale * model.predict(w)
  std::string source;   // "loader measurements" or "images/s per worker count"

  double jobRate(double workers) const { return fitted ? jobScale * model.predict(workers) : 0; }
};

inline constexpr double kLoaderBoundWaitShare = 0.05;

ProfileFit fitProfile(const std::vector<BurstMeasurement>& bursts);

// The smallest worker count whose rate is within `tolerance` (0.02: 2%) of the best rate.
// Returns -1 for an empty list.
int recommendWorkers(const std::vector<std::pair<int, double>>& rates, double tolerance);

// The rates the recommendation weighs: the model at every w from the smallest to the largest
// swept w (the measured rates of the successful bursts when nothing could be fitted).
std::vector<std::pair<int, double>> candidateRates(const ProfileFit& fit,
                                                   const std::vector<BurstMeasurement>& bursts);

}  // namespace tl::profile
