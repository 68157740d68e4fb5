#include "tools/profile/throughput_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/check.h"
#include "common/files.h"
#include "tools/plot/painter.h"

namespace tl::profile {
namespace {

using plot::kBlack;
using plot::kGrid;
using plot::Painter;
using plot::tickLabel;
constexpr double kFontSize = 14;

void draw(Painter& p, const ThroughputPlot& plot, int width, int height) {
  const double left = 90, right = width - 30, top = 75, bottom = height - 70;

  double maxW = 1, maxRate = std::max(0.0, plot.modelAtZero);
  for (const auto* series : {&plot.measured, &plot.model}) {
    for (const auto& pt : *series) {
      maxW = std::max(maxW, pt.workers);
      if (std::isfinite(pt.imagesPerSecond)) maxRate = std::max(maxRate, pt.imagesPerSecond);
    }
  }
  const double yStep = niceTickStep(maxRate > 0 ? maxRate * 1.1 : 1, 6);
  const double yTop = std::ceil((maxRate > 0 ? maxRate * 1.05 : 1) / yStep) * yStep;
  const double xStep = std::max(1.0, niceTickStep(maxW, 10));
  const double xTop = std::ceil(maxW / xStep) * xStep;
  const double inset = 15;  // keeps points at the ends of the range off the axes
  auto px = [&](double w) { return left + inset + (right - left - 2 * inset) * w / xTop; };
  auto py = [&](double rate) { return bottom - (bottom - top) * std::min(rate, yTop) / yTop; };

  // Grid and tick labels.
  for (double y = 0; y <= yTop + yStep / 2; y += yStep) {
    const double row = std::round(py(y));
    p.line(left, row, right, row, kGrid);
    p.line(left - 5, row, left, row, kBlack);
    p.text(left - 10, row, tickLabel(y, yStep), kBlack, 1);
  }
  for (double x = 0; x <= xTop + xStep / 2; x += xStep) {
    const double col = std::round(px(x));
    p.line(col, top, col, bottom, kGrid);
    p.line(col, bottom, col, bottom + 5, kBlack);
    p.text(col, bottom + 18, tickLabel(x, xStep), kBlack, 0.5);
  }
  p.line(left, top, left, bottom, kBlack, 2);
  p.line(left, bottom, right, bottom, kBlack, 2);

  // Title, axis labels, and the legend in one row between the title and the plot.
  p.text((left + right) / 2, 22, "Throughput vs loader workers", kBlack, 0.5);
  p.text((left + right) / 2, height - 25, "loader workers", kBlack, 0.5);
  p.text(25, (top + bottom) / 2, "images/s", kBlack, 0.5, /*up=*/true);
  const double legendY = 52;
  double legendX = right - p.textWidth("measured") - 25;
  if (!plot.model.empty()) {
    const double modelX = legendX - p.textWidth("model") - 50;
    p.line(modelX, legendY, modelX + 20, legendY, kModelColour, 3);
    p.text(modelX + 26, legendY, "model", kBlack);
  }
  p.disc(legendX + 5, legendY, 5, kMeasuredColour);
  p.text(legendX + 16, legendY, "measured", kBlack);

  if (plot.recommended >= 0) {
    const double col = std::round(px(plot.recommended));
    p.line(col, top, col, bottom, kRecommendedColour, 2, 6);
    p.text(col + 6, bottom - 16, "best: " + std::to_string(plot.recommended), kRecommendedColour);
  }
  std::vector<std::pair<double, double>> curve;
  for (const auto& pt : plot.model) curve.emplace_back(px(pt.workers), py(pt.imagesPerSecond));
  p.polyline(curve, kModelColour, 3);
  if (plot.modelAtZero >= 0) {
    const double x0 = px(0), y0 = py(plot.modelAtZero);
    if (!curve.empty())
      p.line(x0, y0, curve.front().first, curve.front().second, kModelColour, 1, 4);
    p.square(x0, y0, 5, kModelColour);
  }
  for (const auto& pt : plot.measured)
    p.disc(px(pt.workers), py(pt.imagesPerSecond), 6, kMeasuredColour);
}

}  // namespace

double niceTickStep(double top, int maxTicks) { return tl::plot::niceTickStep(top, maxTicks); }

std::string renderThroughputPng(const ThroughputPlot& plot, int width, int height) {
  tl::plot::Canvas canvas(width, height);
  Painter painter(canvas.context(), kFontSize);
  draw(painter, plot, width, height);
  return canvas.png();
}

void writeThroughputPng(const ThroughputPlot& plot, const std::string& path, int width,
                        int height) {
  writeFileAtomic(path, renderThroughputPng(plot, width, height));
}

}  // namespace tl::profile
