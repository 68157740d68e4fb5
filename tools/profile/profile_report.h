// What tl-profile prints and writes: the sweep table, profile.csv, profile.json, profile.png.
#pragma once

#include <string>
#include <vector>

#include "tools/profile/burst.h"
#include "tools/profile/profile_fit.h"

namespace tl::profile {

struct ProfileResult {
  std::vector<BurstMeasurement> bursts;  // in sweep order
  ProfileFit fit;
  int recommended = -1;  // -1: no burst succeeded
  double tolerance = 0.02;
};

// Fits the model to the bursts and picks the recommended worker count.
ProfileResult analyseSweep(std::vector<BurstMeasurement> bursts, double tolerance);

// "workers  measured images/s  modelled images/s  wait share" plus the model and the advice.
std::string profileTable(const ProfileResult& result);
// Columns: workers,measured_images_per_s,modelled_images_per_s,data_wait_share,warmup_excluded,
// exit_status; a failed burst has empty measured numbers.
std::string profileCsv(const ProfileResult& result);
std::string profileJson(const ProfileResult& result);

// Writes profile.csv, profile.json and profile.png into `dir`.
void writeProfileFiles(const ProfileResult& result, const std::string& dir);

}  // namespace tl::profile
