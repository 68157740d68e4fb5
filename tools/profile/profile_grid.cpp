#include "tools/profile/profile_grid.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "dataload/sample_cache.h"

namespace tl::profile {

CacheDimension readCacheDimension(const std::string& burstFolder, FittedReads reads,
                                  bool windowWarm) {
  CacheDimension d;
  std::ifstream in(joinPath(burstFolder, "metrics.jsonl"));
  double storageBytes = 0, storageSeconds = 0, servedBytes = 0, served = 0, misses = 0;
  double laterMisses = 0, laterServed = 0, samples = 0, budget = 0;
  int epochs = 0;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || j.value("type", "") != "epoch" || !j.contains("cache")) continue;
    const auto& c = j["cache"];
    const double epochHits = c.value("hits", 0.0), epochMisses = c.value("misses", 0.0);
    storageBytes += c.value("bytes_from_storage", 0.0);
    storageSeconds += c.value("storage_s", 0.0);
    servedBytes += c.value("bytes_from_storage", 0.0) + c.value("bytes_from_cache", 0.0);
    served += epochHits + epochMisses;
    misses += epochMisses;
    samples = std::max(samples, c.value("samples", 0.0));
    budget = std::max(budget, c.value("budget_bytes", 0.0));
    if (++epochs > 1) {
      laterMisses += epochMisses;
      laterServed += epochHits + epochMisses;
    }
  }
  if (epochs == 0 || served <= 0 || samples <= 0) {
    d.note = "no epoch record with cache figures in " + joinPath(burstFolder, "metrics.jsonl") +
             " (the bursts need --cache-mb)";
    return d;
  }
  if (storageBytes <= 0 || storageSeconds <= 0) {
    d.note = "the burst read nothing from storage, so the storage speed is unknown";
    return d;
  }
  d.measured = true;
  d.cache.sampleBytes = servedBytes / served;
  d.cache.datasetBytes =
      samples * (d.cache.sampleBytes + double(data::SampleCache::kEntryOverhead));
  d.cache.storageSecondsPerByte = storageSeconds / storageBytes;
  d.warm = laterServed > 0;
  d.steadyMissShare = d.warm ? laterMisses / laterServed : d.cache.missShare(budget);
  const bool steadyReads = reads == FittedReads::SteadyWindow && windowWarm && d.warm;
  d.cache.fittedMissShare = steadyReads ? laterMisses / laterServed : misses / served;
  return d;
}

double GridProfile::predict(int workers, double cacheBytes) const {
  if (!fit.fitted) return 0;
  coordinator::CacheProfile cache = dimension.cache;
  if (fit.source != "loader measurements") cache.storageSecondsPerByte /= std::max(1.0, perProcess);
  if (!dimension.measured) cache = {};
  return fit.jobScale * cache.predict(fit.model, workers, cacheBytes);
}

std::vector<GridCell> predictGrid(const GridProfile& profile, const std::vector<int>& workers,
                                  const std::vector<double>& cacheMb) {
  std::vector<GridCell> cells;
  for (double mb : cacheMb) {
    for (int w : workers) {
      cells.push_back({w, mb, profile.predict(w, double(data::cacheMiB(mb))), -1});
    }
  }
  return cells;
}

int recommendCell(const std::vector<GridCell>& cells, double tolerance) {
  double best = 0;
  for (const GridCell& c : cells) best = std::max(best, c.predicted);
  int chosen = -1;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].predicted < (1 - tolerance) * best) continue;
    if (chosen < 0) {
      chosen = int(i);
      continue;
    }
    const GridCell& c = cells[size_t(chosen)];
    if (cells[i].workers < c.workers ||
        (cells[i].workers == c.workers && cells[i].cacheMb < c.cacheMb)) {
      chosen = int(i);
    }
  }
  return chosen;
}

std::string gridCsv(const std::vector<GridCell>& cells) {
  std::string out =
      "workers,cache_mb,predicted_images_per_s,measured_images_per_s,error,measured_warm\n";
  char line[160];
  for (const GridCell& c : cells) {
    if (c.measured >= 0) {
      std::snprintf(line, sizeof line, "%d,%.3f,%.2f,%.2f,%.4f,%d\n", c.workers, c.cacheMb,
                    c.predicted, c.measured, c.measured > 0 ? c.predicted / c.measured - 1 : 0.0,
                    c.measuredWarm ? 1 : 0);
    } else {
      std::snprintf(line, sizeof line, "%d,%.3f,%.2f,,,\n", c.workers, c.cacheMb, c.predicted);
    }
    out += line;
  }
  return out;
}

}  // namespace tl::profile
