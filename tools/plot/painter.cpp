#include "tools/plot/painter.h"

#include <cairo.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "common/check.h"

namespace tl::plot {
namespace {

cairo_status_t appendToString(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

struct PngReader {
  const std::string* bytes;
  size_t at = 0;
};

cairo_status_t readFromString(void* closure, unsigned char* data, unsigned int length) {
  auto* r = static_cast<PngReader*>(closure);
  if (r->at + length > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
  std::memcpy(data, r->bytes->data() + r->at, length);
  r->at += length;
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

std::string tilePngs(const std::vector<std::string>& pngs, int columns) {
  TL_REQUIRE(!pngs.empty() && columns >= 1, "tiling PNGs: none given, or fewer than one a row");
  std::vector<std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)>> tiles;
  for (size_t i = 0; i < pngs.size(); ++i) {
    PngReader r{&pngs[i]};
    tiles.emplace_back(cairo_image_surface_create_from_png_stream(readFromString, &r), cairo_surface_destroy);
    TL_REQUIRE(cairo_surface_status(tiles.back().get()) == CAIRO_STATUS_SUCCESS, "tiling PNGs: image ", i,
               " is not a PNG");
  }
  const int w = cairo_image_surface_get_width(tiles[0].get()), h = cairo_image_surface_get_height(tiles[0].get());
  for (size_t i = 1; i < tiles.size(); ++i) {
    TL_REQUIRE(cairo_image_surface_get_width(tiles[i].get()) == w &&
                   cairo_image_surface_get_height(tiles[i].get()) == h,
               "tiling PNGs: image ", i, " is not ", w, "x", h, " as the first");
  }
  const int rows = (int(tiles.size()) + columns - 1) / columns;
  Canvas page(w * columns, h * rows);
  for (size_t i = 0; i < tiles.size(); ++i) {
    cairo_set_source_surface(page.context(), tiles[i].get(), double(int(i) % columns * w), double(int(i) / columns * h));
    cairo_paint(page.context());
  }
  return page.png();
}

Canvas::Canvas(int width, int height) {
  TL_CHECK(width >= 200 && height >= 150, "plot of ", width, "x", height, " is too small");
  surface_ = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  TL_CHECK(cairo_surface_status(surface_) == CAIRO_STATUS_SUCCESS,
           "cairo surface: ", cairo_status_to_string(cairo_surface_status(surface_)));
  cr_ = cairo_create(surface_);
  cairo_set_source_rgb(cr_, 1, 1, 1);
  cairo_paint(cr_);
}

Canvas::~Canvas() {
  if (cr_ != nullptr) cairo_destroy(cr_);
  cairo_surface_destroy(surface_);
}

std::string Canvas::png() {
  TL_CHECK(cairo_status(cr_) == CAIRO_STATUS_SUCCESS,
           "cairo drawing: ", cairo_status_to_string(cairo_status(cr_)));
  cairo_destroy(cr_);  // finishes the drawing before the encoding
  cr_ = nullptr;
  std::string png;
  const cairo_status_t status = cairo_surface_write_to_png_stream(surface_, appendToString, &png);
  TL_CHECK(status == CAIRO_STATUS_SUCCESS, "PNG encoding: ", cairo_status_to_string(status));
  return png;
}

Painter::Painter(cairo_t* cr, double fontSize) : cr_(cr), fontSize_(fontSize) {
  cairo_select_font_face(cr_, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr_, fontSize_);
}

void Painter::colour(Colour c) { cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0); }

void Painter::line(double x0, double y0, double x1, double y1, Colour c, double width,
                   double dash) {
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

void Painter::polyline(const std::vector<std::pair<double, double>>& points, Colour c, double width,
                       double dash) {
  if (points.size() < 2) return;
  colour(c);
  cairo_set_line_width(cr_, width);
  cairo_set_line_join(cr_, CAIRO_LINE_JOIN_ROUND);
  cairo_set_dash(cr_, &dash, dash > 0 ? 1 : 0, 0);
  cairo_move_to(cr_, points[0].first, points[0].second);
  for (size_t i = 1; i < points.size(); ++i) cairo_line_to(cr_, points[i].first, points[i].second);
  cairo_stroke(cr_);
  cairo_set_dash(cr_, nullptr, 0, 0);
}

void Painter::disc(double cx, double cy, double radius, Colour c) {
  colour(c);
  cairo_new_sub_path(cr_);
  cairo_arc(cr_, cx, cy, radius, 0, 2 * M_PI);
  cairo_fill(cr_);
}

void Painter::square(double cx, double cy, double half, Colour c) {
  colour(c);
  cairo_rectangle(cr_, cx - half, cy - half, 2 * half, 2 * half);
  cairo_fill(cr_);
}

void Painter::rectangle(double x, double y, double width, double height, Colour c) {
  colour(c);
  cairo_rectangle(cr_, x, y, width, height);
  cairo_fill(cr_);
}

void Painter::frame(double x, double y, double width, double height, Colour c, double lineWidth) {
  colour(c);
  cairo_set_line_width(cr_, lineWidth);
  cairo_rectangle(cr_, x, y, width, height);
  cairo_stroke(cr_);
}

void Painter::fontSize(double size) {
  fontSize_ = size;
  cairo_set_font_size(cr_, fontSize_);
}

double Painter::textWidth(const std::string& s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr_, s.c_str(), &e);
  return e.x_advance;
}

void Painter::text(double x, double y, const std::string& s, Colour c, double ax, bool up) {
  colour(c);
  cairo_save(cr_);
  cairo_translate(cr_, x, y);
  if (up) cairo_rotate(cr_, -M_PI / 2);
  cairo_move_to(cr_, -ax * textWidth(s), fontSize_ * 0.36);
  cairo_show_text(cr_, s.c_str());
  cairo_restore(cr_);
}

double niceTickStep(double top, int maxTicks) {
  if (!(top > 0)) return 1;
  double raw = top / maxTicks;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::string tickLabel(double value, double step) {
  char buf[32];
  int decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step)));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace tl::plot
