// tl-profile's picture: measured images/s against loader workers (dots), the fitted model
// (a line), and the recommended worker count (a dashed line), drawn with cairo (anti-aliased,
// a sans-serif font) and encoded as PNG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/plot/painter.h"

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

// The colours of the series (see plot::Colour).
using PlotColour = plot::Colour;
constexpr PlotColour kMeasuredColour{214, 80, 30};
constexpr PlotColour kModelColour{40, 90, 200};
constexpr PlotColour kRecommendedColour{40, 150, 60};

// The plot as PNG file bytes (8-bit RGB(A), width x height pixels).
std::string renderThroughputPng(const ThroughputPlot& plot, int width = 800, int height = 500);
// Writes it atomically; InputError naming the path when it cannot.
void writeThroughputPng(const ThroughputPlot& plot, const std::string& path, int width = 800,
                        int height = 500);

// Axis ticks: a step of 1, 2 or 5 times a power of ten giving at most `maxTicks` intervals
// over [0, top].
double niceTickStep(double top, int maxTicks);

}  // namespace tl::profile
