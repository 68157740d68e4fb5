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
  const double left = 100, right = width - 20, top = 60, bottom = height - 60;
  const double cw = (right - left) / double(std::max<size_t>(1, workers.size()));
  const double ch = (bottom - top) / double(std::max<size_t>(1, cacheMb.size()));
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 14);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, width / 2.0, 25, "predicted images/s: loader workers x cache budget", true);
  text(cr, width / 2.0, height - 20, "loader workers", true);
  for (size_t i = 0; i < cells.size(); ++i) {
    const GridCell& c = cells[i];
    const double col = double(std::find(workers.begin(), workers.end(), c.workers) - workers.begin());
    const double row = double(std::find(cacheMb.begin(), cacheMb.end(), c.cacheMb) - cacheMb.begin());
    const double x = left + col * cw, y = bottom - (row + 1) * ch;
    const double share = best > 0 ? std::clamp(c.predicted / best, 0.0, 1.0) : 0;
    cairo_set_source_rgb(cr, 1 - 0.85 * share, 1 - 0.6 * share, 1 - 0.2 * share);
    cairo_rectangle(cr, x, y, cw, ch);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, share > 0.6 ? 1 : 0, share > 0.6 ? 1 : 0, share > 0.6 ? 1 : 0);
    text(cr, x + cw / 2, y + ch / 2, number("%.0f", c.predicted), true);
    if (c.measured >= 0) {
      cairo_set_source_rgb(cr, 214 / 255.0, 80 / 255.0, 30 / 255.0);
      cairo_arc(cr, x + 10, y + 10, 5, 0, 6.2832);
      cairo_fill(cr);
    }
    if (int(i) == recommended) {
      cairo_set_source_rgb(cr, 40 / 255.0, 150 / 255.0, 60 / 255.0);
      cairo_set_line_width(cr, 4);
      cairo_rectangle(cr, x + 2, y + 2, cw - 4, ch - 4);
      cairo_stroke(cr);
    }
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
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
