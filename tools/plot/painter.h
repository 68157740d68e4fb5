// The cairo drawing shared by tl's plots (tl-profile's throughput plot and heat map, tl-report's
// line plots, tl-sim's figures): a canvas that owns the image surface and encodes it as PNG, and a painter with the
// few primitives the plots need, in pixel coordinates, y down. Torch-free.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

typedef struct _cairo cairo_t;
typedef struct _cairo_surface cairo_surface_t;

namespace tl::plot {

// A series' colour: the inside of a dot or line is exactly this colour; its edges are blended
// with what lies under them.
struct Colour {
  uint8_t r, g, b;
};
constexpr Colour kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{225, 225, 225};

// An RGB image of width x height pixels, painted white.
class Canvas {
 public:
  Canvas(int width, int height);
  ~Canvas();
  Canvas(const Canvas&) = delete;
  Canvas& operator=(const Canvas&) = delete;
  cairo_t* context() { return cr_; }
  // The image as PNG file bytes; checks that nothing drawn failed.
  std::string png();

 private:
  cairo_surface_t* surface_ = nullptr;
  cairo_t* cr_ = nullptr;
};

class Painter {
 public:
  Painter(cairo_t* cr, double fontSize);

  void colour(Colour c);
  // A line; with dash > 0, dash pixels on, dash off. Horizontal and vertical lines of odd width
  // sit on pixel centres so they stay crisp.
  void line(double x0, double y0, double x1, double y1, Colour c, double width = 1,
            double dash = 0);
  void polyline(const std::vector<std::pair<double, double>>& points, Colour c, double width,
                double dash = 0);
  void disc(double cx, double cy, double radius, Colour c);
  void square(double cx, double cy, double half, Colour c);
  void rectangle(double x, double y, double width, double height, Colour c);  // filled
  // A rectangle's outline, `lineWidth` pixels wide, centred on its edges.
  void frame(double x, double y, double width, double height, Colour c, double lineWidth);
  // The size of the text drawn from now on (and measured by textWidth).
  void fontSize(double size);
  double textWidth(const std::string& s);
  // Text whose box is placed relative to (x, y): ax = 0 left, 0.5 centre, 1 right; the
  // vertical centre of digits and capitals at y. `up`: turned to read bottom to top.
  void text(double x, double y, const std::string& s, Colour c, double ax = 0, bool up = false);

 private:
  cairo_t* cr_;
  double fontSize_;
};

// PNG images of one size tiled `columns` to a row, left to right then down, on white, as one
// PNG. InputError when there is none, one is not a PNG, or their sizes differ.
std::string tilePngs(const std::vector<std::string>& pngs, int columns);

// Axis ticks: a step of 1, 2 or 5 times a power of ten giving at most `maxTicks` intervals
// over [0, top].
double niceTickStep(double top, int maxTicks);
// A tick's label with as many decimals as the step needs.
std::string tickLabel(double value, double step);

}  // namespace tl::plot
