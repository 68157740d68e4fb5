// tl-profile's picture: measured images/s against loader workers (dots), the fitted model
// (a line), and the recommended worker count (a dashed line).
#pragma once

#include <vector>

#include "launcher/profile/canvas.h"

namespace tl::profile {

struct PlotPoint {
  double workers, imagesPerSecond;
};

struct ThroughputPlot {
  std::vector<PlotPoint> measured;
  std::vector<PlotPoint> model;  // a polyline over w >= 1, in increasing workers; empty: none
  double modelAtZero = -1;       // the model's rate with 0 workers; negative: not shown
  int recommended = -1;          // -1: none
};

Canvas drawThroughputPlot(const ThroughputPlot& plot, int width = 800, int height = 500);

// Axis ticks: a step of 1, 2 or 5 times a power of ten giving at most `maxTicks` intervals
// over [0, top].
double niceTickStep(double top, int maxTicks);

}  // namespace tl::profile
