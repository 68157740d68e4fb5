#include "launcher/profile/canvas.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"
#include "launcher/profile/bitmap_font.h"

namespace tl::profile {

Canvas::Canvas(int width, int height, Rgb background) : width_(width), height_(height) {
  TL_CHECK(width > 0 && height > 0, "canvas ", width, "x", height);
  pixels_.resize(size_t(width) * size_t(height) * 3);
  fillRect(0, 0, width - 1, height - 1, background);
}

Rgb Canvas::at(int x, int y) const {
  TL_CHECK(x >= 0 && y >= 0 && x < width_ && y < height_);
  const uint8_t* p = &pixels_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
  return {p[0], p[1], p[2]};
}

void Canvas::set(int x, int y, Rgb color) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  uint8_t* p = &pixels_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
  p[0] = color.r;
  p[1] = color.g;
  p[2] = color.b;
}

void Canvas::fillRect(int x0, int y0, int x1, int y1, Rgb color) {
  for (int y = std::max(0, std::min(y0, y1)); y <= std::min(height_ - 1, std::max(y0, y1)); ++y) {
    for (int x = std::max(0, std::min(x0, x1)); x <= std::min(width_ - 1, std::max(x0, x1)); ++x) {
      set(x, y, color);
    }
  }
}

void Canvas::line(double x0, double y0, double x1, double y1, Rgb color, int thickness, int dash) {
  // Walk the line in unit steps along its longer axis and stamp a square brush at each point.
  const double length = std::max(std::abs(x1 - x0), std::abs(y1 - y0));
  const int steps = std::max(1, int(std::ceil(length)));
  const int lo = -(thickness - 1) / 2, hi = thickness / 2;
  for (int i = 0; i <= steps; ++i) {
    if (dash > 0 && (i / dash) % 2 == 1) continue;
    double t = double(i) / steps;
    int x = int(std::lround(x0 + (x1 - x0) * t)), y = int(std::lround(y0 + (y1 - y0) * t));
    fillRect(x + lo, y + lo, x + hi, y + hi, color);
  }
}

void Canvas::fillCircle(double cx, double cy, double radius, Rgb color) {
  for (int y = int(std::floor(cy - radius)); y <= int(std::ceil(cy + radius)); ++y) {
    for (int x = int(std::floor(cx - radius)); x <= int(std::ceil(cx + radius)); ++x) {
      double dx = x - cx, dy = y - cy;
      if (dx * dx + dy * dy <= radius * radius) set(x, y, color);
    }
  }
}

void Canvas::text(int x, int y, const std::string& s, Rgb color, int scale) {
  for (size_t i = 0; i < s.size(); ++i) {
    const Glyph& g = glyphFor(s[i]);
    const int left = x + int(i) * kGlyphAdvance * scale;
    for (int row = 0; row < kGlyphHeight; ++row) {
      for (int col = 0; col < kGlyphWidth; ++col) {
        if (!(g[size_t(row)] & (0x10 >> col))) continue;
        fillRect(left + col * scale, y + row * scale, left + (col + 1) * scale - 1,
                 y + (row + 1) * scale - 1, color);
      }
    }
  }
}

void Canvas::textUp(int x, int y, const std::string& s, Rgb color, int scale) {
  // Rotating counter-clockwise maps a glyph's column to height above y and its row to x.
  for (size_t i = 0; i < s.size(); ++i) {
    const Glyph& g = glyphFor(s[i]);
    const int bottom = y - int(i) * kGlyphAdvance * scale;
    for (int row = 0; row < kGlyphHeight; ++row) {
      for (int col = 0; col < kGlyphWidth; ++col) {
        if (!(g[size_t(row)] & (0x10 >> col))) continue;
        int px = x + row * scale, py = bottom - (col + 1) * scale + 1;
        fillRect(px, py, px + scale - 1, py + scale - 1, color);
      }
    }
  }
}

int Canvas::textWidth(const std::string& s, int scale) {
  return s.empty() ? 0 : (int(s.size()) * kGlyphAdvance - 1) * scale;
}

int Canvas::textHeight(int scale) { return kGlyphHeight * scale; }

}  // namespace tl::profile
