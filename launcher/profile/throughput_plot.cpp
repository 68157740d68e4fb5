#include "launcher/profile/throughput_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace tl::profile {
namespace {

const Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{225, 225, 225}, kMeasured{214, 80, 30},
    kModel{40, 90, 200}, kRecommended{40, 150, 60};

std::string tickLabel(double value, double step) {
  char buf[32];
  int decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step)));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace

double niceTickStep(double top, int maxTicks) {
  if (!(top > 0)) return 1;
  double raw = top / maxTicks;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

Canvas drawThroughputPlot(const ThroughputPlot& plot, int width, int height) {
  Canvas c(width, height, kWhite);
  const int left = 90, right = width - 30, top = 75, bottom = height - 70;

  double maxW = 1, maxRate = std::max(0.0, plot.modelAtZero);
  for (const auto* series : {&plot.measured, &plot.model}) {
    for (const auto& p : *series) {
      maxW = std::max(maxW, p.workers);
      if (std::isfinite(p.imagesPerSecond)) maxRate = std::max(maxRate, p.imagesPerSecond);
    }
  }
  const double yStep = niceTickStep(maxRate > 0 ? maxRate * 1.1 : 1, 6);
  const double yTop = std::ceil((maxRate > 0 ? maxRate * 1.05 : 1) / yStep) * yStep;
  const double xStep = std::max(1.0, niceTickStep(maxW, 10));
  const double xTop = std::ceil(maxW / xStep) * xStep;
  const int inset = 15;  // keeps points at the ends of the range off the axes
  auto px = [&](double w) { return left + inset + (right - left - 2 * inset) * w / xTop; };
  auto py = [&](double rate) { return bottom - (bottom - top) * std::min(rate, yTop) / yTop; };

  // Grid and tick labels.
  for (double y = 0; y <= yTop + yStep / 2; y += yStep) {
    int row = int(std::lround(py(y)));
    c.line(left, row, right, row, kGrid);
    c.line(left - 5, row, left, row, kBlack);
    std::string label = tickLabel(y, yStep);
    c.text(left - 10 - Canvas::textWidth(label, 2), row - Canvas::textHeight(2) / 2, label, kBlack,
           2);
  }
  for (double x = 0; x <= xTop + xStep / 2; x += xStep) {
    int col = int(std::lround(px(x)));
    c.line(col, top, col, bottom, kGrid);
    c.line(col, bottom, col, bottom + 5, kBlack);
    std::string label = tickLabel(x, xStep);
    c.text(col - Canvas::textWidth(label, 2) / 2, bottom + 10, label, kBlack, 2);
  }
  c.line(left, top, left, bottom, kBlack, 2);
  c.line(left, bottom, right, bottom, kBlack, 2);

  // Labels and legend.
  const std::string title = "THROUGHPUT VS LOADER WORKERS";
  c.text((left + right - Canvas::textWidth(title, 2)) / 2, 15, title, kBlack, 2);
  const std::string xLabel = "LOADER WORKERS";
  c.text((left + right - Canvas::textWidth(xLabel, 2)) / 2, height - 30, xLabel, kBlack, 2);
  const std::string yLabel = "IMAGES/S";
  c.textUp(15, (top + bottom + Canvas::textWidth(yLabel, 2)) / 2, yLabel, kBlack, 2);
  // The legend sits in one row between the title and the plot, where no data can be.
  const int legendY = 45;
  int legendX = right - Canvas::textWidth("MEASURED", 2) - 35;
  if (!plot.model.empty()) {
    legendX -= Canvas::textWidth("MODEL", 2) + 45;
    c.line(legendX + Canvas::textWidth("MEASURED", 2) + 45, legendY + 7,
           legendX + Canvas::textWidth("MEASURED", 2) + 65, legendY + 7, kModel, 3);
    c.text(legendX + Canvas::textWidth("MEASURED", 2) + 70, legendY, "MODEL", kBlack, 2);
  }
  c.fillCircle(legendX + 10, legendY + 7, 5, kMeasured);
  c.text(legendX + 25, legendY, "MEASURED", kBlack, 2);

  if (plot.recommended >= 0) {
    int col = int(std::lround(px(plot.recommended)));
    c.line(col, top, col, bottom, kRecommended, 2, 6);
    c.text(col + 6, bottom - 8 - Canvas::textHeight(2), "BEST " + std::to_string(plot.recommended),
           kRecommended, 2);
  }
  for (size_t i = 1; i < plot.model.size(); ++i) {
    const auto &a = plot.model[i - 1], &b = plot.model[i];
    c.line(px(a.workers), py(a.imagesPerSecond), px(b.workers), py(b.imagesPerSecond), kModel, 3);
  }
  if (plot.modelAtZero >= 0) {
    const int x0 = int(std::lround(px(0))), y0 = int(std::lround(py(plot.modelAtZero)));
    if (!plot.model.empty()) {
      c.line(x0, y0, px(plot.model.front().workers), py(plot.model.front().imagesPerSecond), kModel,
             1, 4);
    }
    c.fillRect(x0 - 5, y0 - 5, x0 + 5, y0 + 5, kModel);
  }
  for (const auto& p : plot.measured)
    c.fillCircle(px(p.workers), py(p.imagesPerSecond), 6, kMeasured);
  return c;
}

}  // namespace tl::profile
