// --cache-mb: the dataset cache's figures in every epoch record of metrics.jsonl.
#pragma once

#include "dataload/dataset.h"
#include "runtime/train/metrics.h"

namespace tl::launcher {

// When `train` reads through a cache, each epoch record gets "cache": hits, misses,
// bytes_from_storage, bytes_from_cache and storage_s (the loader threads' read time of the misses)
// since the previous epoch record, and used_bytes, budget_bytes, cached_samples, samples (that the
// cache covers) and peak_used_bytes as the record is written. The figures are this process's (the
// lead's); loader threads run up to workers x prefetch batches ahead of training, so an epoch's
// counts may include the first batches of the next. `train` must outlive `metrics`' use. Nothing
// happens for a dataset without a cache.
void reportCacheInEpochRecords(train::MetricsLog& metrics, const data::Dataset& train);

}  // namespace tl::launcher
