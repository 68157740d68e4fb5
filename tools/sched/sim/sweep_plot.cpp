// bench_scheduler --sweep's plots: a line per policy against offered load, panels in a grid.
#include <cairo.h>

#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "tools/sched/sim/plot_frame.h"
#include "tools/sched/sim/report.h"

namespace tl::sched {

std::string loadSweepPng(const std::string& title, const std::string& yLabel,
                         const std::vector<SweepSeries>& series, double reference, int width,
                         int height) {
  double xTop = 0, yTop = reference * 1.2;
  for (const auto& s : series) {
    TL_CHECK(s.load.size() == s.mean.size() && s.lo.size() == s.mean.size() &&
                 s.hi.size() == s.mean.size(),
             "sweep series ", s.policy, ": lengths differ");
    for (size_t i = 0; i < s.load.size(); ++i) {
      xTop = std::max(xTop, s.load[i]);
      yTop = std::max(yTop, s.hi[i]);
    }
  }
  xTop = std::max(0.5, xTop * 1.1);
  yTop = std::max(0.1, yTop * 1.1);
  plot::Frame f(width, height, xTop, yTop, title, "offered load over the arrival window", yLabel);
  if (reference > 0) f.line(f.x(0), f.y(reference), f.x(xTop), f.y(reference), {90, 90, 90}, 1);
  std::vector<std::string> names;
  std::vector<Rgb> colours;
  for (const auto& s : series) {
    const Rgb c = s.ownColour ? s.colour : policyColour(s.policy);
    colours.push_back(c);
    std::vector<std::pair<double, double>> pts;
    for (size_t i = 0; i < s.load.size(); ++i) {
      pts.emplace_back(f.x(s.load[i]), f.y(s.mean[i]));
      f.line(f.x(s.load[i]), f.y(s.lo[i]), f.x(s.load[i]), f.y(s.hi[i]), c, 1.5);  // spread
      f.box(f.x(s.load[i]) - 3, f.y(s.mean[i]) - 3, f.x(s.load[i]) + 3, f.y(s.mean[i]) + 3, c);
    }
    f.polyline(pts, c, 2);
    names.push_back(s.policy);
  }
  f.legend(names, colours);
  return f.png();
}

namespace {

struct Reader {
  const std::string* bytes;
  size_t at = 0;
};

cairo_status_t readPng(void* closure, unsigned char* data, unsigned int n) {
  auto* r = static_cast<Reader*>(closure);
  if (r->at + n > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
  std::memcpy(data, r->bytes->data() + r->at, n);
  r->at += n;
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

std::string gridPng(const std::vector<std::string>& pngs, int columns) {
  TL_CHECK(!pngs.empty() && columns >= 1, "a grid needs panels");
  std::vector<cairo_surface_t*> panels;
  for (const auto& png : pngs) {
    Reader r{&png};
    panels.push_back(cairo_image_surface_create_from_png_stream(readPng, &r));
    TL_CHECK(cairo_surface_status(panels.back()) == CAIRO_STATUS_SUCCESS,
             "grid: a panel is no PNG");
  }
  const int w = cairo_image_surface_get_width(panels[0]),
            h = cairo_image_surface_get_height(panels[0]);
  const int rows = (int(panels.size()) + columns - 1) / columns;
  cairo_surface_t* page = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w * columns, h * rows);
  cairo_t* cr = cairo_create(page);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  for (size_t i = 0; i < panels.size(); ++i) {
    cairo_set_source_surface(cr, panels[i], double(int(i) % columns * w),
                             double(int(i) / columns * h));
    cairo_paint(cr);
    cairo_surface_destroy(panels[i]);
  }
  std::string bytes;
  const auto status = cairo_surface_write_to_png_stream(
      page,
      [](void* out, const unsigned char* data, unsigned int n) {
        static_cast<std::string*>(out)->append(reinterpret_cast<const char*>(data), n);
        return CAIRO_STATUS_SUCCESS;
      },
      &bytes);
  cairo_destroy(cr);
  cairo_surface_destroy(page);
  TL_CHECK(status == CAIRO_STATUS_SUCCESS, "grid PNG: ", cairo_status_to_string(status));
  return bytes;
}

}  // namespace tl::sched
