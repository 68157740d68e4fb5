// Line plots (tl-report): several labelled series of (x, y) points on shared axes, linear or
// logarithmic y, a legend, drawn with the shared cairo painter and encoded as PNG. Torch-free.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/plot/painter.h"

namespace tl::plot {

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // drawn in this order
  bool dashed = false;
  bool markers = false;  // a dot on every point (few points, e.g. one per epoch)
};

struct LinePlot {
  std::string title, xLabel, yLabel;
  bool logY = false;  // on a log axis, points with y <= 0 are left out (the line breaks there)
  std::vector<Series> series;
};

// Series colours, in order (then again from the first).
const std::vector<Colour>& seriesColours();

// The plot as PNG file bytes. InputError when no series has a drawable point.
std::string renderLinePlotPng(const LinePlot& plot, int width = 900, int height = 520);

// A labelled vertical line across a plot at x (an event: a rescale, a lost rank).
struct VerticalMark {
  double x = 0;
  std::string label;
  Colour colour{0, 0, 0};
};

// One plot of a figure, with its marks.
struct Panel {
  LinePlot plot;
  std::vector<VerticalMark> marks;
};

// Panels stacked top to bottom, each width x panelHeight pixels, as one PNG. InputError when
// there is no panel or a panel has no drawable point.
std::string renderPanelsPng(const std::vector<Panel>& panels, int width, int panelHeight);

}  // namespace tl::plot
