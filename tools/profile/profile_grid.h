// tl-profile in two dimensions: throughput against loader workers x dataset-cache budget
// (--cache-mb), by Synergy's optimistic shortcut. The worker sweep runs at the full budget and
// gives the worker model (profile_fit.h); the memory dimension is derived, not swept: the cache
// admits a share budget / data set of the samples and never evicts, so the miss share of any
// budget is known, and each miss costs a worker the read time of a sample at the storage speed
// the bursts measured (coordinator/cache_model.h). A few (workers, budget) check bursts measure the
// prediction.
//
// What a burst tells about the cache comes from its metrics.jsonl epoch records ("cache": hits,
// misses, bytes_from_storage, bytes_from_cache, storage_s, samples, budget_bytes; rank 0's
// process): storage seconds per byte over all epochs, mean sample bytes, the samples the cache
// covers, and two miss shares that must not be confused:
//  - the steady one at the full budget, which the grid describes: measured in the epochs after
//    the first when the bursts reached them (warm), else the cache model's max(0, 1 - B/D)
//    (cold: every read of a first epoch misses, whatever the budget), and said so;
//  - the one of the reads behind the worker model (fittedMissShare), from which the model is
//    moved to each budget: every read of the burst for a fit from loader measurements (the
//    loader's busy time covers them all), the steady window's reads for a fit from images/s.
#pragma once

#include <string>
#include <vector>

#include "coordinator/cache_model.h"
#include "tools/profile/profile_fit.h"

namespace tl::profile {

struct CacheDimension {
  bool measured = false;
  coordinator::CacheProfile cache;  // fittedMissShare: that of the reads the worker model saw
  // True when the burst read past its first epoch, so steadyMissShare was measured; false:
  // cold, steadyMissShare is the cache model's.
  bool warm = false;
  double steadyMissShare = 1;  // at the full budget
  std::string note;            // why it is not measured
};

// Which reads of a burst the worker model was fitted on (see above).
enum class FittedReads { WholeBurst, SteadyWindow };

// From one burst folder's metrics.jsonl. `windowWarm`: the burst's steady window began after
// its first epoch (BurstMeasurement::warm).
CacheDimension readCacheDimension(const std::string& burstFolder, FittedReads reads,
                                  bool windowWarm);

struct GridProfile {
  ProfileFit fit;  // at the full budget
  CacheDimension dimension;
  // Job images/s with `workers` loader workers and `cacheBytes` of cache. A fit from images/s
  // alone describes the whole job (w workers in every process) rather than rank 0's process:
  // the per-image read time is then divided by `perProcess` (job images / rank 0's images).
  double perProcess = 1;
  double predict(int workers, double cacheBytes) const;
};

struct GridCell {
  int workers = 0;
  double cacheMb = 0;
  double predicted = 0;
  double measured = -1;  // a check burst's images/s; < 0: not measured
  bool measuredWarm = false;  // the check burst's rate is from the epochs after its first
};

// Every (w, budget) of the lists, workers varying fastest.
std::vector<GridCell> predictGrid(const GridProfile& profile, const std::vector<int>& workers,
                                  const std::vector<double>& cacheMb);

// The cell with the fewest workers, then the least memory, whose prediction is within
// `tolerance` of the best one. Index into `cells`; -1 when empty.
int recommendCell(const std::vector<GridCell>& cells, double tolerance);

// workers,cache_mb,predicted_images_per_s,measured_images_per_s,error,measured_warm (measured
// empty when not measured; error = predicted / measured - 1; measured_warm 1 or 0).
std::string gridCsv(const std::vector<GridCell>& cells);

}  // namespace tl::profile
