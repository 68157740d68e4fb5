#include "tools/profile/heat_map.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>

#include "common/check.h"
#include "common/files.h"
#include "tools/plot/painter.h"

namespace tl::profile {
namespace {

using plot::Colour;

std::string number(const char* format, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

constexpr Colour kCheckColour{214, 80, 30};
constexpr Colour kRecommendColour{40, 150, 60};

void checkMark(plot::Painter& p, double x, double y) { p.disc(x, y, 5, kCheckColour); }

void recommendBox(plot::Painter& p, double x, double y, double w, double h) {
  p.frame(x, y, w, h, kRecommendColour, 4);
}

// The marks' legend, in one line centred at (cx, y).
void legend(plot::Painter& p, double cx, double y) {
  const std::string check = "check burst: measured images/s (warm; cold ones say so)";
  const std::string recommended = "recommended (workers, cache)";
  const double a = p.textWidth(check), b = p.textWidth(recommended);
  double x = cx - (a + b + 70) / 2;
  checkMark(p, x + 5, y);
  p.text(x + 15, y, check, plot::kBlack);
  x += 15 + a + 25;
  recommendBox(p, x, y - 7, 20, 14);
  p.text(x + 28, y, recommended, plot::kBlack);
}

// A cell's colour: white for nothing, deep blue for the best prediction.
Colour shade(double share) {
  auto channel = [](double v) { return uint8_t(std::lround(255 * std::clamp(v, 0.0, 1.0))); };
  return Colour{channel(1 - 0.85 * share), channel(1 - 0.6 * share), channel(1 - 0.2 * share)};
}

void draw(plot::Painter& p, const std::vector<GridCell>& cells, int recommended, int width,
          int height) {
  std::vector<int> workers;
  std::vector<double> cacheMb;
  double best = 0;
  for (const GridCell& c : cells) {
    if (std::find(workers.begin(), workers.end(), c.workers) == workers.end())
      workers.push_back(c.workers);
    if (std::find(cacheMb.begin(), cacheMb.end(), c.cacheMb) == cacheMb.end())
      cacheMb.push_back(c.cacheMb);
    best = std::max(best, c.predicted);
  }
  std::sort(workers.begin(), workers.end());
  std::sort(cacheMb.begin(), cacheMb.end());
  const double left = 100, right = width - 20, top = 50, bottom = height - 75;
  const double cw = (right - left) / double(std::max<size_t>(1, workers.size()));
  const double ch = (bottom - top) / double(std::max<size_t>(1, cacheMb.size()));
  p.fontSize(14);
  p.text(width / 2.0, 25, "predicted images/s: loader workers x cache budget", plot::kBlack, 0.5);
  p.text(width / 2.0, height - 45, "loader workers", plot::kBlack, 0.5);
  p.fontSize(12);
  legend(p, width / 2.0, height - 18);
  for (size_t i = 0; i < cells.size(); ++i) {
    const GridCell& c = cells[i];
    const double col = double(std::find(workers.begin(), workers.end(), c.workers) - workers.begin());
    const double row = double(std::find(cacheMb.begin(), cacheMb.end(), c.cacheMb) - cacheMb.begin());
    const double x = left + col * cw, y = bottom - (row + 1) * ch;
    const double share = best > 0 ? std::clamp(c.predicted / best, 0.0, 1.0) : 0;
    p.rectangle(x, y, cw, ch, shade(share));
    const Colour ink = share > 0.6 ? plot::kWhite : plot::kBlack;
    p.fontSize(14);
    const bool checked = c.measured >= 0;
    p.text(x + cw / 2, y + ch * (checked ? 0.33 : 0.5), number("%.0f", c.predicted), ink, 0.5);
    if (checked) {  // the check's measurement in its own cell, under the prediction
      p.fontSize(12);
      const std::string m = c.measured > 0
                                ? number("%.0f", c.measured) + (c.measuredWarm ? "" : " cold")
                                : std::string("failed");
      checkMark(p, x + cw / 2 - p.textWidth(m) / 2 - 9, y + ch * 0.7);
      p.text(x + cw / 2 + 5, y + ch * 0.7, m, ink, 0.5);
    }
    if (int(i) == recommended) recommendBox(p, x + 2, y + 2, cw - 4, ch - 4);
  }
  p.fontSize(14);
  for (size_t k = 0; k < workers.size(); ++k)
    p.text(left + (double(k) + 0.5) * cw, bottom + 15, std::to_string(workers[k]), plot::kBlack, 0.5);
  for (size_t k = 0; k < cacheMb.size(); ++k)
    p.text(10, bottom - (double(k) + 0.5) * ch, number("%.1f MiB", cacheMb[k]), plot::kBlack);
}

}  // namespace

std::string renderHeatMapPng(const std::vector<GridCell>& cells, int recommended, int width,
                             int height) {
  TL_CHECK(!cells.empty(), "a heat map needs at least one cell");
  plot::Canvas canvas(width, height);
  plot::Painter painter(canvas.context(), 14);
  draw(painter, cells, recommended, width, height);
  return canvas.png();
}

void writeHeatMapPng(const std::vector<GridCell>& cells, int recommended, const std::string& path) {
  writeFileAtomic(path, renderHeatMapPng(cells, recommended));
}

}  // namespace tl::profile
