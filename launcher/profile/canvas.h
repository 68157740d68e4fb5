// A tiny RGB rasteriser for tl-profile's plot: lines, filled circles and rectangles, and text
// in a built-in 5x7 bitmap font (digits, A-Z, a few symbols; lower case drawn as upper case).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::profile {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }
  const std::vector<uint8_t>& pixels() const { return pixels_; }  // row-major RGB
  Rgb at(int x, int y) const;

  void set(int x, int y, Rgb color);                         // ignores points outside the canvas
  void fillRect(int x0, int y0, int x1, int y1, Rgb color);  // inclusive corners
  // A line `thickness` pixels wide; with dash > 0 it is drawn dash on, dash off.
  void line(double x0, double y0, double x1, double y1, Rgb color, int thickness = 1, int dash = 0);
  void fillCircle(double cx, double cy, double radius, Rgb color);

  // Text with its top-left corner at (x, y); each font pixel becomes scale x scale pixels.
  void text(int x, int y, const std::string& s, Rgb color, int scale = 1);
  // Text turned 90 degrees counter-clockwise, reading bottom to top, starting at (x, y) = its
  // bottom-left corner.
  void textUp(int x, int y, const std::string& s, Rgb color, int scale = 1);
  static int textWidth(const std::string& s, int scale = 1);
  static int textHeight(int scale = 1);

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

}  // namespace tl::profile
