#include "launcher/cache_metrics.h"

#include <memory>

#include <nlohmann/json.hpp>

#include "dataload/sample_cache.h"

namespace tl::launcher {

void reportCacheInEpochRecords(train::MetricsLog& metrics, const data::Dataset& train) {
  data::SampleCache* cache = train.sampleCache();
  if (!cache) return;
  auto previous = std::make_shared<data::SampleCacheStats>(cache->stats());
  metrics.annotateEpochs([cache, previous](nlohmann::json& record) {
    const data::SampleCacheStats now = cache->stats();
    const data::SampleCacheStats epoch = now - *previous;
    *previous = now;
    record["cache"] = {{"hits", epoch.hits},
                       {"misses", epoch.misses},
                       {"bytes_from_storage", epoch.bytesFromStorage},
                       {"bytes_from_cache", epoch.bytesFromCache},
                       {"storage_s", epoch.storageSeconds},
                       {"used_bytes", now.usedBytes},
                       {"budget_bytes", now.budgetBytes},
                       {"cached_samples", now.cachedSamples},
                       {"samples", cache->samples()},
                       {"peak_used_bytes", now.peakUsedBytes}};
  });
}

}  // namespace tl::launcher
