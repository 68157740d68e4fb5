#include "tools/profile/profile_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tl::profile {
namespace {

ProfileFit fitFromLoaderMeasurements(const std::vector<BurstMeasurement>& bursts) {
  coordinator::ThroughputFitter fitter;
  double scale = 1;
  for (const auto& b : bursts) {
    if (!b.ok() || !b.hasLoaderMeasurement) continue;
    fitter.addLoader(b.loader);
    fitter.addCompute(b.compute);
    scale = b.jobPerProcessRatio;
  }
  ProfileFit fit;
  if (!fitter.ready()) return fit;
  fit.fitted = true;
  fit.model = fitter.fit();
  fit.jobScale = scale;
  fit.source = "loader measurements";
  return fit;
}

ProfileFit fitFromRates(const std::vector<BurstMeasurement>& bursts) {
  constexpr double kWindow = 1000;  // seconds: observations are built from rates, any length works
  double computeRate = -1;
  int smallestWorkers = std::numeric_limits<int>::max();
  std::vector<const BurstMeasurement*> loaderBound;
  for (const auto& b : bursts) {
    if (!b.ok()) continue;
    if (b.waitShare < kLoaderBoundWaitShare) computeRate = std::max(computeRate, b.imagesPerSecond);
    if (b.workers <= 0) continue;
    smallestWorkers = std::min(smallestWorkers, b.workers);
    if (b.waitShare >= kLoaderBoundWaitShare) loaderBound.push_back(&b);
  }
  ProfileFit fit;
  if (smallestWorkers == std::numeric_limits<int>::max()) return fit;  // no usable w > 0
  fit.fitted = true;
  fit.source = "images/s per worker count";
  if (loaderBound.empty()) {
    fit.model.a = 0;
    fit.model.b = smallestWorkers / computeRate;
    fit.model.computeRate = computeRate;
    return fit;
  }
  coordinator::ThroughputFitter fitter;
  for (const auto* b : loaderBound) {
    // w workers together making `rate` images/s spend w / rate worker-seconds per image.
    fitter.addLoader(
        {b->workers, b->workers * kWindow, int64_t(std::llround(b->imagesPerSecond * kWindow))});
  }
  fitter.addCompute(
      {kWindow, int64_t(std::llround((computeRate > 0 ? computeRate : 1) * kWindow))});
  fit.model = fitter.fit();
  fit.model.computeRate = computeRate > 0 ? computeRate : std::numeric_limits<double>::infinity();
  return fit;
}

}  // namespace

ProfileFit fitProfile(const std::vector<BurstMeasurement>& bursts) {
  ProfileFit fit = fitFromLoaderMeasurements(bursts);
  if (fit.fitted) return fit;
  return fitFromRates(bursts);
}

int recommendWorkers(const std::vector<std::pair<int, double>>& rates, double tolerance) {
  if (rates.empty()) return -1;
  double best = 0;
  for (const auto& [w, rate] : rates) best = std::max(best, rate);
  int chosen = -1;
  for (const auto& [w, rate] : rates) {
    if (rate >= (1 - tolerance) * best && (chosen < 0 || w < chosen)) chosen = w;
  }
  return chosen;
}

std::vector<std::pair<int, double>> candidateRates(const ProfileFit& fit,
                                                   const std::vector<BurstMeasurement>& bursts) {
  std::vector<std::pair<int, double>> rates;
  int minWorkers = std::numeric_limits<int>::max(), maxWorkers = -1;
  for (const auto& b : bursts) {
    if (!b.ok()) continue;
    minWorkers = std::min(minWorkers, b.workers);
    maxWorkers = std::max(maxWorkers, b.workers);
    if (!fit.fitted) rates.emplace_back(b.workers, b.imagesPerSecond);
  }
  if (fit.fitted) {
    for (int w = minWorkers; w <= maxWorkers; ++w) rates.emplace_back(w, fit.jobRate(w));
  }
  return rates;
}

}  // namespace tl::profile
