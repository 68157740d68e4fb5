#include "coordinator/cache_model.h"

#include <algorithm>

namespace tl::coordinator {

double CacheProfile::missShare(double budgetBytes) const {
  if (datasetBytes <= 0) return 0;
  return std::clamp(1.0 - budgetBytes / datasetBytes, 0.0, 1.0);
}

ThroughputModel CacheProfile::atBudget(const ThroughputModel& fitted, double budgetBytes) const {
  ThroughputModel m = fitted;
  if (!known()) return m;
  const double shift =
      (missShare(budgetBytes) - fittedMissShare) * sampleBytes * storageSecondsPerByte;
  m.b = std::max(fitted.b + shift, 0.01 * fitted.b);
  return m;
}

double CacheProfile::predict(const ThroughputModel& fitted, double workers,
                             double budgetBytes) const {
  return atBudget(fitted, budgetBytes).predict(workers);
}

}  // namespace tl::coordinator
