#include "tools/profile/profile_2d.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/files.h"
#include "dataload/sample_cache.h"
#include "tools/profile/heat_map.h"

namespace tl::profile {
namespace {

double parseMb(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  TL_REQUIRE(used == text.size() && !text.empty() && std::isfinite(v) && v >= 0 && v <= 1 << 30,
             flag, ": expected a size in MiB (a number >= 0), got '", text, "'");
  return v;
}

std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::vector<CacheCheck> parseCacheChecks(const std::string& text) {
  std::vector<CacheCheck> checks;
  if (text.empty()) return checks;
  for (const std::string& part : splitCommas(text)) {
    const size_t colon = part.find(':');
    TL_REQUIRE(colon != std::string::npos && colon > 0, "--cache-check: expected W:MB, got '",
               part, "'");
    const std::string w = part.substr(0, colon);
    TL_REQUIRE(w.find_first_not_of("0123456789") == std::string::npos && w.size() <= 3,
               "--cache-check: worker count '", w, "' in '", part, "' is not a whole number");
    const int workers = std::stoi(w);
    TL_REQUIRE(workers >= 1 && workers <= 256, "--cache-check: workers must be 1 to 256, got ",
               workers);
    checks.push_back({workers, parseMb(part.substr(colon + 1), "--cache-check")});
  }
  return checks;
}

std::vector<double> parseCacheGrid(const std::string& text) {
  std::vector<double> mb;
  for (const std::string& part : splitCommas(text)) mb.push_back(parseMb(part, "--cache-grid"));
  std::sort(mb.begin(), mb.end());
  mb.erase(std::unique(mb.begin(), mb.end()), mb.end());
  return mb;
}

std::vector<double> defaultCacheGrid(double fullMb) {
  return {0, fullMb / 4, fullMb / 2, 3 * fullMb / 4, fullMb};
}

std::string cacheFlagValue(double mb) { return fixed(mb, 6); }

std::string cacheLabel(double mb) {
  std::string text = fixed(mb, 6);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

CacheReport buildCacheReport(const ProfileResult& sweep, const CacheDimension& dimension,
                             double fullMb, const std::vector<double>& gridMb) {
  CacheReport r;
  r.fullMb = fullMb;
  r.tolerance = sweep.tolerance;
  r.profile.fit = sweep.fit;
  r.profile.dimension = dimension;
  int minW = std::numeric_limits<int>::max(), maxW = 0;
  for (const BurstMeasurement& b : sweep.bursts) {
    if (!b.ok()) continue;
    minW = std::min(minW, b.workers);
    maxW = std::max(maxW, b.workers);
    r.profile.perProcess = b.jobPerProcessRatio;
  }
  std::vector<int> workers;
  for (int w = minW; w <= maxW; ++w) workers.push_back(w);
  if (!sweep.fit.fitted || workers.empty() || !dimension.measured) return r;
  r.cells = predictGrid(r.profile, workers, gridMb);
  r.recommended = recommendCell(r.cells, r.tolerance);
  return r;
}

void addCheck(CacheReport& report, int workers, double cacheMb, double measured, bool warm) {
  report.checks.push_back({workers, cacheMb,
                           report.profile.predict(workers, double(data::cacheMiB(cacheMb))),
                           measured, warm});
  for (GridCell& c : report.cells) {
    if (c.workers == workers && std::abs(c.cacheMb - cacheMb) < 1e-9) {
      c.measured = measured;
      c.measuredWarm = warm;
    }
  }
}

namespace {

std::string missShareLine(const CacheDimension& d) {
  std::string line =
      "steady miss share at the full budget " + fixed(100 * d.steadyMissShare, 1) + "% ";
  line += d.warm ? "(measured warm: the epochs after the first)"
                 : "(COLD: the bursts ended within their first epoch, where every read misses; "
                   "this share is the cache model's max(0, 1 - budget / data set), not measured: "
                   "the data set is too large to measure warm in bursts this short)";
  return line + "; worker model fitted at a miss share of " +
         fixed(100 * d.cache.fittedMissShare, 1) + "%\n";
}

}  // namespace

std::string cacheTable(const CacheReport& r) {
  std::string out;
  const CacheDimension& d = r.profile.dimension;
  if (!d.measured) {
    return "memory dimension: not measured (" + d.note + ")\n";
  }
  out += "memory dimension (at --cache-mb " + fixed(r.fullMb, 2) + "): data set " +
         fixed(d.cache.datasetBytes / 1048576.0, 2) + " MiB in the cache, " +
         fixed(d.cache.sampleBytes / 1024.0, 1) + " KiB a sample, storage " +
         fixed(1 / d.cache.storageSecondsPerByte / 1048576.0, 1) + " MiB/s per worker\n" +
         missShareLine(d);
  if (r.cells.empty()) return out + "no grid (the worker model is not fitted)\n";
  std::vector<double> mbs;
  std::vector<int> ws;
  for (const GridCell& c : r.cells) {
    if (std::find(mbs.begin(), mbs.end(), c.cacheMb) == mbs.end()) mbs.push_back(c.cacheMb);
    if (std::find(ws.begin(), ws.end(), c.workers) == ws.end()) ws.push_back(c.workers);
  }
  out += "predicted images/s   cache MiB \\ workers:";
  for (int w : ws) out += " " + std::string(std::max(0, 8 - int(std::to_string(w).size())), ' ') + std::to_string(w);
  out += "\n";
  for (double mb : mbs) {
    char head[64];
    std::snprintf(head, sizeof head, "%41s", fixed(mb, 2).c_str());
    out += head;
    for (const GridCell& c : r.cells) {
      if (c.cacheMb != mb) continue;
      char cell[32];
      std::snprintf(cell, sizeof cell, " %8s", fixed(c.predicted, 1).c_str());
      out += cell;
    }
    out += "\n";
  }
  for (const GridCell& c : r.checks) {
    out += "check: " + std::to_string(c.workers) + " workers, " + fixed(c.cacheMb, 2) +
           " MiB: measured " + (c.measured > 0 ? fixed(c.measured, 1) : std::string("-")) +
           (c.measured > 0 ? (c.measuredWarm ? " warm" : " COLD (within its first epoch)") : "") +
           ", predicted " + fixed(c.predicted, 1) +
           (c.measured > 0 ? " (" + fixed(100 * (c.predicted / c.measured - 1), 1) + "%)" : "") +
           "\n";
  }
  if (r.recommended >= 0) {
    const GridCell& c = r.cells[size_t(r.recommended)];
    out += "recommended: " + std::to_string(c.workers) + " workers, " + fixed(c.cacheMb, 2) +
           " MiB cache (the fewest workers, then the least memory, within " +
           fixed(100 * r.tolerance, 0) + "% of the best predicted throughput)\n";
  }
  return out;
}

void writeCacheFiles(const CacheReport& r, const std::string& dir) {
  std::vector<GridCell> rows = r.cells;
  for (const GridCell& c : r.checks) {
    bool onGrid = false;
    for (const GridCell& g : r.cells) onGrid |= g.workers == c.workers && std::abs(g.cacheMb - c.cacheMb) < 1e-9;
    if (!onGrid) rows.push_back(c);
  }
  writeFileAtomic(joinPath(dir, "profile_2d.csv"), gridCsv(rows));
  nlohmann::json j;
  const CacheDimension& d = r.profile.dimension;
  j["cache_mb"] = r.fullMb;
  j["memory_measured"] = d.measured;
  if (!d.measured) j["note"] = d.note;
  j["dataset_bytes"] = d.cache.datasetBytes;
  j["sample_bytes"] = d.cache.sampleBytes;
  j["storage_seconds_per_byte"] = d.cache.storageSecondsPerByte;
  j["miss_share_at_full_budget"] = d.steadyMissShare;
  j["miss_share_measured_warm"] = d.warm;  // false: the cache model's, the bursts were cold
  j["fitted_miss_share"] = d.cache.fittedMissShare;
  j["tolerance"] = r.tolerance;
  if (r.recommended >= 0) {
    j["recommended_workers"] = r.cells[size_t(r.recommended)].workers;
    j["recommended_cache_mb"] = r.cells[size_t(r.recommended)].cacheMb;
  }
  nlohmann::json checks = nlohmann::json::array();
  for (const GridCell& c : r.checks) {
    checks.push_back({{"workers", c.workers},
                      {"cache_mb", c.cacheMb},
                      {"predicted", c.predicted},
                      {"measured", c.measured},
                      {"measured_warm", c.measuredWarm}});
  }
  j["checks"] = checks;
  writeFileAtomic(joinPath(dir, "profile_2d.json"), j.dump(2) + "\n");
  if (!r.cells.empty()) writeHeatMapPng(r.cells, r.recommended, joinPath(dir, "profile_2d.png"));
}

}  // namespace tl::profile
