// tl-profile --cache-mb: the second dimension of the profile, after the worker sweep (which ran
// at the full budget): the grid of predicted throughput over workers x cache budget, the check
// bursts that measure it at a few points, and what is printed and written (profile_2d.csv,
// profile_2d.json, profile_2d.png). The model is profile_grid.h's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/profile/profile_grid.h"
#include "tools/profile/profile_report.h"

namespace tl::profile {

struct CacheCheck {
  int workers = 0;
  double cacheMb = 0;
};

// "W:MB,W:MB" (e.g. "2:0,2:16"). InputError naming --cache-check for anything else.
std::vector<CacheCheck> parseCacheChecks(const std::string& text);
// "A,B,C" in MiB, each >= 0. InputError naming --cache-grid for anything else.
std::vector<double> parseCacheGrid(const std::string& text);
// The default memory axis: 0, M/4, M/2, 3M/4, M.
std::vector<double> defaultCacheGrid(double fullMb);
// The value tl-profile passes as --cache-mb (enough decimals for a few kB).
std::string cacheFlagValue(double mb);
// The same value without trailing zeros, for folder names: 0, 0.5, 1.25.
std::string cacheLabel(double mb);

struct CacheReport {
  GridProfile profile;
  double fullMb = 0;
  std::vector<GridCell> cells;   // the grid, with measured check points filled in
  std::vector<GridCell> checks;  // every check burst (also those off the grid)
  int recommended = -1;          // index into cells
  double tolerance = 0.02;
};

// The grid from the sweep (its fit and job scale) and the cache figures of one of its bursts.
// Workers: every w from the smallest to the largest successful swept w (0 too when its burst
// ran: loading on the training thread). No cells when the worker model is not fitted or the
// memory dimension not measured.
CacheReport buildCacheReport(const ProfileResult& sweep, const CacheDimension& dimension,
                             double fullMb, const std::vector<double>& gridMb);
// Records a check burst: its measured rate (warm: from the epochs after its first) goes into
// its grid cell when it has one.
void addCheck(CacheReport& report, int workers, double cacheMb, double measured, bool warm);

std::string cacheTable(const CacheReport& report);
// profile_2d.csv, profile_2d.json, profile_2d.png in `dir`.
void writeCacheFiles(const CacheReport& report, const std::string& dir);

}  // namespace tl::profile
