#include "launcher/profile/throughput_plot.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "common/check.h"
#include "common/files.h"

namespace tl::profile {
namespace {

constexpr PlotColour kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{225, 225, 225};
constexpr double kFontSize = 14;

std::string tickLabel(double value, double step) {
  char buf[32];
  int decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step)));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};

// Drawing in pixel coordinates, y down, with the few primitives the plot needs.
class Painter {
 public:
  explicit Painter(cairo_t* cr) : cr_(cr) {
    cairo_select_font_face(cr_, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr_, kFontSize);
  }

  void colour(PlotColour c) { cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0); }

  // A line; with dash > 0, dash pixels on, dash off. Horizontal and vertical lines of odd width
  // sit on pixel centres so they stay crisp.
  void line(double x0, double y0, double x1, double y1, PlotColour c, double width = 1,
            double dash = 0) {
    if (int(width) % 2 == 1) {
      if (x0 == x1) x0 = x1 = std::floor(x0) + 0.5;
      if (y0 == y1) y0 = y1 = std::floor(y0) + 0.5;
    }
    colour(c);
    cairo_set_line_width(cr_, width);
    cairo_set_dash(cr_, &dash, dash > 0 ? 1 : 0, 0);
    cairo_move_to(cr_, x0, y0);
    cairo_line_to(cr_, x1, y1);
    cairo_stroke(cr_);
    cairo_set_dash(cr_, nullptr, 0, 0);
  }

  void polyline(const std::vector<std::pair<double, double>>& points, PlotColour c, double width) {
    if (points.size() < 2) return;
    colour(c);
    cairo_set_line_width(cr_, width);
    cairo_set_line_join(cr_, CAIRO_LINE_JOIN_ROUND);
    cairo_move_to(cr_, points[0].first, points[0].second);
    for (size_t i = 1; i < points.size(); ++i)
      cairo_line_to(cr_, points[i].first, points[i].second);
    cairo_stroke(cr_);
  }

  void disc(double cx, double cy, double radius, PlotColour c) {
    colour(c);
    cairo_new_sub_path(cr_);
    cairo_arc(cr_, cx, cy, radius, 0, 2 * M_PI);
    cairo_fill(cr_);
  }

  void square(double cx, double cy, double half, PlotColour c) {
    colour(c);
    cairo_rectangle(cr_, cx - half, cy - half, 2 * half, 2 * half);
    cairo_fill(cr_);
  }

  double textWidth(const std::string& s) {
    cairo_text_extents_t e;
    cairo_text_extents(cr_, s.c_str(), &e);
    return e.x_advance;
  }

  // Text whose box is placed relative to (x, y): ax = 0 left, 0.5 centre, 1 right; the
  // vertical centre of digits and capitals at y. `up`: turned to read bottom to top.
  void text(double x, double y, const std::string& s, PlotColour c, double ax = 0,
            bool up = false) {
    colour(c);
    cairo_save(cr_);
    cairo_translate(cr_, x, y);
    if (up) cairo_rotate(cr_, -M_PI / 2);
    cairo_move_to(cr_, -ax * textWidth(s), kFontSize * 0.36);
    cairo_show_text(cr_, s.c_str());
    cairo_restore(cr_);
  }

 private:
  cairo_t* cr_;
};

cairo_status_t appendToString(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

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

double niceTickStep(double top, int maxTicks) {
  if (!(top > 0)) return 1;
  double raw = top / maxTicks;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::string renderThroughputPng(const ThroughputPlot& plot, int width, int height) {
  TL_CHECK(width >= 200 && height >= 150, "plot of ", width, "x", height, " is too small");
  std::unique_ptr<cairo_surface_t, SurfaceDeleter> surface(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
  TL_CHECK(cairo_surface_status(surface.get()) == CAIRO_STATUS_SUCCESS,
           "cairo surface: ", cairo_status_to_string(cairo_surface_status(surface.get())));
  {
    std::unique_ptr<cairo_t, ContextDeleter> cr(cairo_create(surface.get()));
    Painter painter(cr.get());
    painter.colour(kWhite);
    cairo_paint(cr.get());
    draw(painter, plot, width, height);
    TL_CHECK(cairo_status(cr.get()) == CAIRO_STATUS_SUCCESS,
             "cairo drawing: ", cairo_status_to_string(cairo_status(cr.get())));
  }
  std::string png;
  const cairo_status_t status =
      cairo_surface_write_to_png_stream(surface.get(), appendToString, &png);
  TL_CHECK(status == CAIRO_STATUS_SUCCESS, "PNG encoding: ", cairo_status_to_string(status));
  return png;
}

void writeThroughputPng(const ThroughputPlot& plot, const std::string& path, int width,
                        int height) {
  writeFileAtomic(path, renderThroughputPng(plot, width, height));
}

}  // namespace tl::profile
