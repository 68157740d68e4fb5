// tl-profile's 2-D picture: predicted images/s over loader workers (columns) x cache budget
// (rows) as a heat map (light: slow, dark blue: fast) with each cell's value written in it,
// the recommended cell outlined in green, and in each cell a check burst measured its measured
// images/s under the prediction, marked with an orange dot; a legend under the axis names the
// marks. Drawn with tools/plot's painter and encoded as PNG.
#pragma once

#include <string>
#include <vector>

#include "tools/profile/profile_grid.h"

namespace tl::profile {

// `cells` as predictGrid returns them (a full grid); `recommended` an index into it or -1.
std::string renderHeatMapPng(const std::vector<GridCell>& cells, int recommended,
                             int width = 800, int height = 500);
// Writes it atomically; InputError naming the path when it cannot.
void writeHeatMapPng(const std::vector<GridCell>& cells, int recommended, const std::string& path);

}  // namespace tl::profile
