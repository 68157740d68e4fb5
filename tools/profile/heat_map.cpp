#include "tools/profile/heat_map.h"

#include <cairo.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "common/check.h"
#include "common/files.h"

namespace tl::profile {
namespace {

cairo_status_t appendPng(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

void text(cairo_t* cr, double x, double y, const std::string& s, bool centred) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, centred ? x - e.width / 2 - e.x_bearing : x, y - e.height / 2 - e.y_bearing);
  cairo_show_text(cr, s.c_str());
}

std::string number(const char* format, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

const double kCheckColour[3] = {214 / 255.0, 80 / 255.0, 30 / 255.0};
const double kRecommendColour[3] = {40 / 255.0, 150 / 255.0, 60 / 255.0};

void checkMark(cairo_t* cr, double x, double y) {
  cairo_set_source_rgb(cr, kCheckColour[0], kCheckColour[1], kCheckColour[2]);
  cairo_arc(cr, x, y, 5, 0, 6.2832);
  cairo_fill(cr);
}

void recommendBox(cairo_t* cr, double x, double y, double w, double h) {
  cairo_set_source_rgb(cr, kRecommendColour[0], kRecommendColour[1], kRecommendColour[2]);
  cairo_set_line_width(cr, 4);
  cairo_rectangle(cr, x, y, w, h);
  cairo_stroke(cr);
}

// The marks' legend, in one line centred at (cx, y).
void legend(cairo_t* cr, double cx, double y) {
  const std::string check = "check burst: measured images/s (warm; cold ones say so)";
  const std::string recommended = "recommended (workers, cache)";
  cairo_text_extents_t a, b;
  cairo_text_extents(cr, check.c_str(), &a);
  cairo_text_extents(cr, recommended.c_str(), &b);
  double x = cx - (a.x_advance + b.x_advance + 70) / 2;
  checkMark(cr, x + 5, y);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, x + 15, y, check, false);
  x += 15 + a.x_advance + 25;
  recommendBox(cr, x, y - 7, 20, 14);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, x + 28, y, recommended, false);
}

void draw(cairo_t* cr, const std::vector<GridCell>& cells, int recommended, int width,
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
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 14);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, width / 2.0, 25, "predicted images/s: loader workers x cache budget", true);
  text(cr, width / 2.0, height - 45, "loader workers", true);
  cairo_set_font_size(cr, 12);
  legend(cr, width / 2.0, height - 18);
  for (size_t i = 0; i < cells.size(); ++i) {
    const GridCell& c = cells[i];
    const double col = double(std::find(workers.begin(), workers.end(), c.workers) - workers.begin());
    const double row = double(std::find(cacheMb.begin(), cacheMb.end(), c.cacheMb) - cacheMb.begin());
    const double x = left + col * cw, y = bottom - (row + 1) * ch;
    const double share = best > 0 ? std::clamp(c.predicted / best, 0.0, 1.0) : 0;
    cairo_set_source_rgb(cr, 1 - 0.85 * share, 1 - 0.6 * share, 1 - 0.2 * share);
    cairo_rectangle(cr, x, y, cw, ch);
    cairo_fill(cr);
    const double ink = share > 0.6 ? 1 : 0;
    cairo_set_source_rgb(cr, ink, ink, ink);
    cairo_set_font_size(cr, 14);
    const bool checked = c.measured >= 0;
    text(cr, x + cw / 2, y + ch * (checked ? 0.33 : 0.5), number("%.0f", c.predicted), true);
    if (checked) {  // the check's measurement in its own cell, under the prediction
      cairo_set_font_size(cr, 12);
      const std::string m = c.measured > 0
                                ? number("%.0f", c.measured) + (c.measuredWarm ? "" : " cold")
                                : std::string("failed");
      cairo_text_extents_t e;
      cairo_text_extents(cr, m.c_str(), &e);
      checkMark(cr, x + cw / 2 - e.width / 2 - 9, y + ch * 0.7);
      cairo_set_source_rgb(cr, ink, ink, ink);
      text(cr, x + cw / 2 + 5, y + ch * 0.7, m, true);
    }
    if (int(i) == recommended) recommendBox(cr, x + 2, y + 2, cw - 4, ch - 4);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, 14);
  for (size_t k = 0; k < workers.size(); ++k)
    text(cr, left + (double(k) + 0.5) * cw, bottom + 15, std::to_string(workers[k]), true);
  for (size_t k = 0; k < cacheMb.size(); ++k)
    text(cr, 10, bottom - (double(k) + 0.5) * ch, number("%.1f MiB", cacheMb[k]), false);
}

}  // namespace

std::string renderHeatMapPng(const std::vector<GridCell>& cells, int recommended, int width,
                             int height) {
  TL_CHECK(!cells.empty(), "a heat map needs at least one cell");
  std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)> surface(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height), cairo_surface_destroy);
  {
    std::unique_ptr<cairo_t, void (*)(cairo_t*)> cr(cairo_create(surface.get()), cairo_destroy);
    cairo_set_source_rgb(cr.get(), 1, 1, 1);
    cairo_paint(cr.get());
    draw(cr.get(), cells, recommended, width, height);
    TL_CHECK(cairo_status(cr.get()) == CAIRO_STATUS_SUCCESS,
             "cairo drawing: ", cairo_status_to_string(cairo_status(cr.get())));
  }
  std::string png;
  const cairo_status_t status = cairo_surface_write_to_png_stream(surface.get(), appendPng, &png);
  TL_CHECK(status == CAIRO_STATUS_SUCCESS, "PNG encoding: ", cairo_status_to_string(status));
  return png;
}

void writeHeatMapPng(const std::vector<GridCell>& cells, int recommended, const std::string& path) {
  writeFileAtomic(path, renderHeatMapPng(cells, recommended));
}

}  // namespace tl::profile
