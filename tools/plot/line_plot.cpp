#include "tools/plot/line_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/check.h"

namespace tl::plot {
namespace {

constexpr double kFontSize = 14;

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
};

bool drawable(const LinePlot& plot, double x, double y) {
  return std::isfinite(x) && std::isfinite(y) && (!plot.logY || y > 0);
}

std::string powerLabel(int exponent) {
  if (exponent == 0) return "1";
  if (exponent == 1) return "10";
  return "1e" + std::to_string(exponent);
}

}  // namespace

const std::vector<Colour>& seriesColours() {
  static const std::vector<Colour> colours = {{40, 90, 200},   {214, 80, 30},  {40, 150, 60},
                                              {150, 60, 170},  {200, 160, 20}, {20, 160, 170},
                                              {120, 120, 120}, {190, 40, 110}};
  return colours;
}

namespace {

// The plot in the box (ox, oy, width, height) of the painter's canvas; `marks` as labelled
// vertical lines over the plot area.
void drawLinePlot(Painter& p, const LinePlot& plot, const std::vector<VerticalMark>& marks, double ox,
                  double oy, int width, int height) {
  Range xs, ys;
  for (const Series& s : plot.series) {
    for (const auto& [x, y] : s.points) {
      if (!drawable(plot, x, y)) continue;
      xs.add(x);
      ys.add(plot.logY ? std::log10(y) : y);
    }
  }
  TL_REQUIRE(!xs.empty(), "plot '", plot.title, "': no series has a point to draw",
             plot.logY ? " (a log axis leaves out values <= 0)" : "");
  // The legend sits between the title and the plot area, one row per series, so it never
  // hides a curve.
  constexpr double kLegendTop = 50, kRowHeight = 20;
  const double left = ox + 95, right = ox + width - 30, bottom = oy + height - 65;
  const double top = oy + kLegendTop + kRowHeight * double(plot.series.size()) + 5;
  TL_REQUIRE(bottom - top >= 60, "plot '", plot.title, "': ", plot.series.size(),
             " series leave no room for the plot at a height of ", height, " pixels");

  // Axes: x over [lo, hi]; y over nice ticks (decades on a log axis), a little headroom.
  if (xs.hi == xs.lo) xs.hi = xs.lo + 1;
  double yLo, yHi, yStep;
  if (plot.logY) {
    yLo = std::floor(ys.lo);
    yHi = std::max(yLo + 1, std::ceil(ys.hi));
    yStep = std::max(1.0, std::ceil((yHi - yLo) / 8));
  } else {
    double span = ys.hi - ys.lo;
    if (span <= 0) span = std::max(1e-12, std::fabs(ys.hi) * 0.1);
    yStep = niceTickStep(span * 1.1, 6);
    yLo = std::floor((ys.lo - span * 0.05) / yStep) * yStep;
    yHi = std::ceil((ys.hi + span * 0.05) / yStep) * yStep;
    if (ys.lo >= 0 && yLo < 0) yLo = 0;
  }
  const double xStep = niceTickStep(xs.hi - xs.lo, 10);
  auto px = [&](double x) { return left + (right - left) * (x - xs.lo) / (xs.hi - xs.lo); };
  auto py = [&](double y) {
    const double v = plot.logY ? std::log10(y) : y;
    return bottom - (bottom - top) * (v - yLo) / (yHi - yLo);
  };
  for (double v = yLo; v <= yHi + yStep / 2; v += yStep) {
    const double row = std::round(bottom - (bottom - top) * (v - yLo) / (yHi - yLo));
    p.line(left, row, right, row, kGrid);
    p.line(left - 5, row, left, row, kBlack);
    p.text(left - 10, row, plot.logY ? powerLabel(int(std::lround(v))) : tickLabel(v, yStep),
           kBlack, 1);
  }
  for (double x = std::ceil(xs.lo / xStep) * xStep; x <= xs.hi + xStep / 1000; x += xStep) {
    const double col = std::round(px(x));
    p.line(col, top, col, bottom, kGrid);
    p.line(col, bottom, col, bottom + 5, kBlack);
    p.text(col, bottom + 18, tickLabel(x, xStep), kBlack, 0.5);
  }
  p.line(left, top, left, bottom, kBlack, 2);
  p.line(left, bottom, right, bottom, kBlack, 2);
  p.text((left + right) / 2, oy + 24, plot.title, kBlack, 0.5);
  p.text((left + right) / 2, oy + height - 22, plot.xLabel, kBlack, 0.5);
  p.text(ox + 24, (top + bottom) / 2, plot.yLabel, kBlack, 0.5, /*up=*/true);
  // Marks under the curves: a dashed line at x, its label turned along it at the top.
  for (const VerticalMark& m : marks) {
    if (!(m.x >= xs.lo && m.x <= xs.hi)) continue;
    const double col = std::round(px(m.x));
    p.line(col, top, col, bottom, m.colour, 1, 4);
    if (!m.label.empty()) p.text(col - 7, top + 4, m.label, m.colour, 1, /*up=*/true);
  }

  const auto& colours = seriesColours();
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    const Colour c = colours[i % colours.size()];
    std::vector<std::pair<double, double>> run;
    auto flush = [&] {
      p.polyline(run, c, 2.5, s.dashed ? 8 : 0);
      run.clear();
    };
    for (const auto& [x, y] : s.points) {
      if (!drawable(plot, x, y)) {
        flush();
        continue;
      }
      run.emplace_back(px(x), py(y));
      if (s.markers) p.disc(px(x), py(y), 4, c);
    }
    flush();
  }
  double legendWidth = 0;
  for (const Series& s : plot.series) legendWidth = std::max(legendWidth, p.textWidth(s.label));
  const double legendLeft = right - legendWidth - 36;
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const double row = oy + kLegendTop + kRowHeight * double(i);
    const Colour c = colours[i % colours.size()];
    p.line(legendLeft, row, legendLeft + 28, row, c, 3, plot.series[i].dashed ? 6 : 0);
    p.text(legendLeft + 36, row, plot.series[i].label, kBlack);
  }
}

}  // namespace

std::string renderLinePlotPng(const LinePlot& plot, int width, int height) {
  Canvas canvas(width, height);
  Painter p(canvas.context(), kFontSize);
  drawLinePlot(p, plot, {}, 0, 0, width, height);
  return canvas.png();
}

std::string renderPanelsPng(const std::vector<Panel>& panels, int width, int panelHeight) {
  TL_REQUIRE(!panels.empty(), "a figure of panels needs at least one panel");
  Canvas canvas(width, panelHeight * int(panels.size()));
  Painter p(canvas.context(), kFontSize);
  for (size_t i = 0; i < panels.size(); ++i) {
    drawLinePlot(p, panels[i].plot, panels[i].marks, 0, double(panelHeight) * double(i), width, panelHeight);
  }
  return canvas.png();
}

}  // namespace tl::plot
