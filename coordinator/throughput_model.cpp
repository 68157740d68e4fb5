#include "coordinator/throughput_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/check.h"

namespace tl::coordinator {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A window whose weight has decayed below this share no longer moves the fit: drop it, so a
// long-running job keeps a bounded history.
constexpr double kNegligibleDecay = 1e-4;
constexpr size_t kMaxPoints = 1024;
// b is kept at least this share of the mean per-image time: b = 0 would mean one worker
// produces infinitely fast, which no measurement supports.
constexpr double kMinBShare = 1e-3;

}  // namespace

double ThroughputModel::loaderRate(double workers) const {
  if (workers <= 0) return 0;
  double secondsPerImage = a * workers + b;
  return secondsPerImage > 0 ? workers / secondsPerImage : kInf;
}

double ThroughputModel::predict(double workers) const {
  if (workers <= 0) {
    double serialSeconds = b + (std::isinf(computeRate) ? 0 : 1 / computeRate);
    return serialSeconds > 0 ? 1 / serialSeconds : kInf;
  }
  return std::min(computeRate, loaderRate(workers));
}

ThroughputFitter::ThroughputFitter(double forgetting) : forgetting_(forgetting) {
  TL_CHECK(forgetting > 0 && forgetting <= 1, "forgetting must be in (0, 1], got ", forgetting);
}

void ThroughputFitter::addLoader(const LoaderObservation& observation) {
  if (observation.images <= 0 || observation.workers < 0 || !(observation.busySeconds >= 0)) {
    return;
  }
  for (Point& p : loader_) p.decay *= forgetting_;
  loader_.erase(std::remove_if(loader_.begin(), loader_.end(),
                               [](const Point& p) { return p.decay < kNegligibleDecay; }),
                loader_.end());
  if (loader_.size() >= kMaxPoints) loader_.erase(loader_.begin());
  loader_.push_back({double(observation.workers),
                     observation.busySeconds / double(observation.images),
                     double(observation.images), 1.0});
}

void ThroughputFitter::addCompute(const ComputeObservation& observation) {
  if (observation.images <= 0 || !(observation.computeSeconds >= 0)) return;
  computeSeconds_ = computeSeconds_ * forgetting_ + observation.computeSeconds;
  computeImages_ = computeImages_ * forgetting_ + double(observation.images);
  sawCompute_ = true;
}

bool ThroughputFitter::ready() const { return !loader_.empty() && sawCompute_; }

int ThroughputFitter::distinctWorkerCounts() const {
  std::set<double> sizes;
  for (const Point& p : loader_) sizes.insert(p.workers);
  return int(sizes.size());
}

void ThroughputFitter::shiftSecondsPerImage(double delta) {
  for (Point& p : loader_)
    p.secondsPerImage = std::max(p.secondsPerImage + delta, 0.05 * p.secondsPerImage);
}

ThroughputModel ThroughputFitter::fit() const {
  ThroughputModel model;
  model.computeRate = computeSeconds_ > 0 ? computeImages_ / computeSeconds_ : kInf;
  if (loader_.empty()) return model;

  // Weighted sums for the straight line t = a*w + b.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Point& p : loader_) {
    double weight = p.images * p.decay;
    sw += weight;
    sx += weight * p.workers;
    sy += weight * p.secondsPerImage;
    sxx += weight * p.workers * p.workers;
    sxy += weight * p.workers * p.secondsPerImage;
  }
  const double meanT = sy / sw;
  const double det = sw * sxx - sx * sx;
  // det is the weighted variance of w times sw^2: ~0 when all windows share one pool size.
  if (distinctWorkerCounts() < 2 || det <= 1e-12 * sw * sxx) {
    model.a = 0;
    model.b = meanT;
  } else {
    model.a = (sw * sxy - sx * sy) / det;
    model.b = (sy - model.a * sx) / sw;
  }
  if (model.a < 0) {  // more workers never make each image cheaper: noise, use the mean
    model.a = 0;
    model.b = meanT;
  }
  const double minB = kMinBShare * meanT;
  if (model.b < minB) {  // best line with b held at its floor
    model.b = minB;
    model.a = sxx > 0 ? std::max(0.0, (sxy - minB * sx) / sxx) : 0;
  }
  if (!(model.b > 0)) model.b = std::numeric_limits<double>::min();  // all-zero busy time
  return model;
}

}  // namespace tl::coordinator
