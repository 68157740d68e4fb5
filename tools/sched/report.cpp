#include "tools/sched/report.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "common/check.h"
#include "tools/sched/policy.h"
#include "tools/submit/csv.h"

namespace tl::sched {
namespace {

using submit::fixed;

double niceStep(double top, int maxTicks) {
  if (!(top > 0)) return 1;
  const double raw = top / maxTicks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

// A plot frame: white page, axes with ticks, a title, a legend of policies; callers draw
// series in data coordinates through x()/y().
class Frame {
 public:
  Frame(int width, int height, double xTop, double yTop, const std::string& title,
        const std::string& xLabel, const std::string& yLabel, bool xLog = false,
        bool xTicks = true)
      : width_(width), height_(height), xTop_(xTop), yTop_(yTop), xLog_(xLog) {
    TL_CHECK(width >= 300 && height >= 200, "plot of ", width, "x", height, " is too small");
    surface_ = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    cr_ = cairo_create(surface_);
    cairo_select_font_face(cr_, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr_, 13);
    cairo_set_source_rgb(cr_, 1, 1, 1);
    cairo_paint(cr_);
    left_ = 80, right_ = width - 170, top_ = 45, bottom_ = height - 60;
    const double yStep = niceStep(yTop_, 6);
    for (double v = 0; v <= yTop_ + yStep / 2; v += yStep) {
      line(left_, y(v), right_, y(v), {225, 225, 225}, 1);
      text(left_ - 8, y(v), fixed(v, yStep >= 1 ? 0 : 2), 1);
    }
    if (!xTicks) {
    } else if (xLog_) {
      for (double v = 1; v <= xTop_ * 1.0001; v *= 10) {
        line(x(v), top_, x(v), bottom_, {225, 225, 225}, 1);
        text(x(v), bottom_ + 16, tick(v), 0.5);
      }
    } else {
      const double xStep = niceStep(xTop_, 8);
      for (double v = 0; v <= xTop_ + xStep / 2; v += xStep) {
        line(x(v), top_, x(v), bottom_, {225, 225, 225}, 1);
        text(x(v), bottom_ + 16, tick(v), 0.5);
      }
    }
    line(left_, top_, left_, bottom_, {0, 0, 0}, 2);
    line(left_, bottom_, right_, bottom_, {0, 0, 0}, 2);
    text((left_ + right_) / 2, 20, title, 0.5);
    text((left_ + right_) / 2, height - 22, xLabel, 0.5);
    cairo_save(cr_);
    cairo_translate(cr_, 22, (top_ + bottom_) / 2);
    cairo_rotate(cr_, -M_PI / 2);
    text(0, 0, yLabel, 0.5);
    cairo_restore(cr_);
  }
  ~Frame() {
    cairo_destroy(cr_);
    cairo_surface_destroy(surface_);
  }

  double x(double v) const {
    if (xLog_) return left_ + (right_ - left_) * std::log10(std::max(1.0, v)) / std::log10(xTop_);
    return left_ + (right_ - left_) * v / xTop_;
  }
  double y(double v) const { return bottom_ - (bottom_ - top_) * std::min(v, yTop_) / yTop_; }
  double bottom() const { return bottom_; }
  double left() const { return left_; }
  double right() const { return right_; }

  void line(double x0, double y0, double x1, double y1, Rgb c, double width) {
    cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0);
    cairo_set_line_width(cr_, width);
    cairo_move_to(cr_, x0, y0);
    cairo_line_to(cr_, x1, y1);
    cairo_stroke(cr_);
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, Rgb c, double width) {
    if (pts.size() < 2) return;
    cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0);
    cairo_set_line_width(cr_, width);
    cairo_set_line_join(cr_, CAIRO_LINE_JOIN_ROUND);
    cairo_move_to(cr_, pts[0].first, pts[0].second);
    for (size_t i = 1; i < pts.size(); ++i) cairo_line_to(cr_, pts[i].first, pts[i].second);
    cairo_stroke(cr_);
  }
  void box(double x0, double y0, double x1, double y1, Rgb c) {
    cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0);
    cairo_rectangle(cr_, x0, y0, x1 - x0, y1 - y0);
    cairo_fill(cr_);
  }
  void text(double x, double y, const std::string& s, double ax, Rgb c = {0, 0, 0}) {
    cairo_text_extents_t e;
    cairo_text_extents(cr_, s.c_str(), &e);
    cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0);
    cairo_move_to(cr_, x - ax * e.x_advance, y + 13 * 0.36);
    cairo_show_text(cr_, s.c_str());
  }
  void legend(const std::vector<PolicyRun>& runs) {
    double row = top_ + 10;
    for (const auto& r : runs) {
      line(right_ + 15, row, right_ + 40, row, policyColour(r.policy), 3);
      text(right_ + 46, row, r.policy, 0);
      row += 22;
    }
  }
  std::string png() {
    TL_CHECK(cairo_status(cr_) == CAIRO_STATUS_SUCCESS, "cairo: ", cairo_status_to_string(cairo_status(cr_)));
    std::string bytes;
    const auto status = cairo_surface_write_to_png_stream(
        surface_,
        [](void* out, const unsigned char* data, unsigned int n) {
          static_cast<std::string*>(out)->append(reinterpret_cast<const char*>(data), n);
          return CAIRO_STATUS_SUCCESS;
        },
        &bytes);
    TL_CHECK(status == CAIRO_STATUS_SUCCESS, "PNG encoding: ", cairo_status_to_string(status));
    return bytes;
  }

 private:
  static std::string tick(double v) {
    if (v >= 1e6) return fixed(v / 1e6, 0) + "M";
    if (v >= 1e4) return fixed(v / 1e3, 0) + "k";
    return fixed(v, v == std::floor(v) ? 0 : 1);
  }
  int width_, height_;
  double xTop_, yTop_;
  bool xLog_;
  double left_, right_, top_, bottom_;
  cairo_surface_t* surface_;
  cairo_t* cr_;
};

}  // namespace

Rgb policyColour(const std::string& policy) {
  static const Rgb colours[] = {{214, 80, 30}, {120, 60, 170}, {40, 90, 200}, {40, 150, 60}};
  const auto& names = policyNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == policy) return colours[i];
  return {120, 120, 120};
}

std::string jobsCsv(const SimResult& result) {
  std::ostringstream out;
  out << "id,arrival_s,start_s,finish_s,jct_s,queueing_s,gpu_seconds,rescales\n";
  for (const auto& j : result.jobs)
    out << submit::csvField(j.id) << ',' << fixed(j.arrival, 3) << ',' << fixed(j.start, 3) << ','
        << fixed(j.finish, 3) << ',' << fixed(j.jct(), 3) << ',' << fixed(j.queueing(), 3) << ','
        << fixed(j.gpuSeconds, 1) << ',' << j.rescales << '\n';
  return out.str();
}

std::string summaryCsv(const std::vector<SimSummary>& summaries, double rescaleCost) {
  std::ostringstream out;
  out << "policy,rescale_cost_s,jobs,mean_jct_s,median_jct_s,p99_jct_s,makespan_s,"
         "mean_queueing_s,gpu_utilisation,rescales_per_job\n";
  for (const auto& s : summaries)
    out << s.policy << ',' << fixed(rescaleCost, 1) << ',' << s.jobs << ',' << fixed(s.meanJct, 1)
        << ',' << fixed(s.medianJct, 1) << ',' << fixed(s.p99Jct, 1) << ',' << fixed(s.makespan, 1)
        << ',' << fixed(s.meanQueueing, 1) << ',' << fixed(s.utilisation, 4) << ','
        << fixed(s.rescalesPerJob, 3) << '\n';
  return out.str();
}

std::string summaryTable(const std::vector<SimSummary>& summaries) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-15s %10s %10s %11s %11s %10s %6s %9s %9s\n", "policy",
                "mean JCT", "median", "p99 JCT", "makespan", "queueing", "util", "resc/job",
                "vs first");
  out << line;
  for (const auto& s : summaries) {
    const double ratio = summaries[0].meanJct / std::max(1e-9, s.meanJct);
    std::snprintf(line, sizeof line, "%-15s %9.0fs %9.0fs %10.0fs %10.0fs %9.0fs %5.1f%% %9.2f %8.2fx\n",
                  s.policy.c_str(), s.meanJct, s.medianJct, s.p99Jct, s.makespan, s.meanQueueing,
                  100 * s.utilisation, s.rescalesPerJob, ratio);
    out << line;
  }
  return out.str();
}

std::string jctCdfPng(const std::vector<PolicyRun>& runs, int width, int height) {
  double top = 10;
  for (const auto& r : runs)
    for (const auto& j : r.result->jobs) top = std::max(top, j.jct());
  top = std::pow(10.0, std::ceil(std::log10(top)));
  Frame f(width, height, top, 1, "JCT CDF", "job completion time (s, log scale)", "share of jobs",
          /*xLog=*/true);
  for (const auto& r : runs) {
    std::vector<double> jct;
    for (const auto& j : r.result->jobs) jct.push_back(j.jct());
    std::sort(jct.begin(), jct.end());
    std::vector<std::pair<double, double>> pts{{f.x(jct.empty() ? 1 : jct[0]), f.y(0)}};
    for (size_t i = 0; i < jct.size(); ++i) {
      pts.emplace_back(f.x(jct[i]), f.y(double(i) / jct.size()));
      pts.emplace_back(f.x(jct[i]), f.y(double(i + 1) / jct.size()));
    }
    f.polyline(pts, policyColour(r.policy), 2.5);
  }
  f.legend(runs);
  return f.png();
}

std::string allocationPng(const std::vector<PolicyRun>& runs, int totalGpus, int width, int height) {
  double end = 1;
  for (const auto& r : runs)
    if (!r.result->timeline.empty()) end = std::max(end, r.result->timeline.back().time);
  // Hours for simulated days, seconds for a real run of minutes.
  const double unit = end >= 7200 ? 3600 : end >= 600 ? 60 : 1;
  const char* label = unit == 3600 ? "time (h)" : unit == 60 ? "time (min)" : "time (s)";
  Frame f(width, height, end / unit, totalGpus, "GPUs allocated over time", label, "GPUs");
  for (const auto& r : runs) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& s : r.result->timeline) {
      int used = 0;
      for (int u : s.used) used += u;
      if (!pts.empty()) pts.emplace_back(f.x(s.time / unit), pts.back().second);
      pts.emplace_back(f.x(s.time / unit), f.y(used));
    }
    f.polyline(pts, policyColour(r.policy), 1.5);
  }
  f.legend(runs);
  return f.png();
}

std::string meanJctBarsPng(const std::vector<PolicyRun>& runs, int width, int height) {
  double top = 1;
  for (const auto& r : runs) top = std::max(top, r.result->summary.meanJct);
  top *= 1.1;
  Frame f(width, height, double(runs.size()), top, "Mean JCT per policy", "policy", "mean JCT (s)",
          /*xLog=*/false, /*xTicks=*/false);
  for (size_t i = 0; i < runs.size(); ++i) {
    const double x0 = f.x(i + 0.15), x1 = f.x(i + 0.85), mean = runs[i].result->summary.meanJct;
    f.box(x0, f.y(mean), x1, f.bottom(), policyColour(runs[i].policy));
    f.text((x0 + x1) / 2, f.y(mean) - 10, fixed(mean, 0) + " s", 0.5);
    f.text((x0 + x1) / 2, f.bottom() + 16, runs[i].policy, 0.5);
  }
  f.legend(runs);
  return f.png();
}

}  // namespace tl::sched
