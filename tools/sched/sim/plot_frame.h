// The plot frame tl-sim's PNGs share (report.cpp, sweep_plot.cpp): a white page, axes with
// ticks, a title, a legend of policies; callers draw series in data coordinates through x()/y().
// Drawn with tools/plot's canvas and painter. Internal to tl_sched.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/check.h"
#include "tools/plot/painter.h"
#include "tools/sched/sim/report.h"
#include "tools/submit/csv.h"

namespace tl::sched::plot {

using submit::fixed;

inline double niceStep(double top, int maxTicks) {
  if (!(top > 0)) return 1;
  const double raw = top / maxTicks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

class Frame {
 public:
  Frame(int width, int height, double xTop, double yTop, const std::string& title,
        const std::string& xLabel, const std::string& yLabel, bool xLog = false, bool xTicks = true)
      : canvas_(checkedSize(width, height, width), checkedSize(width, height, height)),
        p_(canvas_.context(), kFontSize), width_(width), height_(height), xTop_(xTop), yTop_(yTop), xLog_(xLog) {
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
    p_.text(22, (top_ + bottom_) / 2, yLabel, colour({0, 0, 0}), 0.5, /*up=*/true);
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
    p_.line(x0, y0, x1, y1, colour(c), width);
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, Rgb c, double width) {
    p_.polyline(pts, colour(c), width);
  }
  void box(double x0, double y0, double x1, double y1, Rgb c) { p_.rectangle(x0, y0, x1 - x0, y1 - y0, colour(c)); }
  void text(double x, double y, const std::string& s, double ax, Rgb c = {0, 0, 0}) {
    p_.text(x, y, s, colour(c), ax);
  }
  void legend(const std::vector<PolicyRun>& runs) {
    std::vector<std::string> names;
    for (const auto& r : runs) names.push_back(r.policy);
    legend(names);
  }
  void legend(const std::vector<std::string>& policies) {
    std::vector<Rgb> colours;
    for (const auto& p : policies) colours.push_back(policyColour(p));
    legend(policies, colours);
  }
  void legend(const std::vector<std::string>& names, const std::vector<Rgb>& colours) {
    double row = top_ + 10;
    for (size_t i = 0; i < names.size(); ++i) {
      line(right_ + 15, row, right_ + 40, row, colours[i], 3);
      text(right_ + 46, row, names[i], 0);
      row += 22;
    }
  }
  std::string png() { return canvas_.png(); }

 private:
  static constexpr double kFontSize = 13;
  static int checkedSize(int width, int height, int size) {
    TL_CHECK(width >= 300 && height >= 200, "plot of ", width, "x", height, " is too small");
    return size;
  }
  static tl::plot::Colour colour(Rgb c) { return {c.r, c.g, c.b}; }
  static std::string tick(double v) {
    if (v >= 1e6) return fixed(v / 1e6, 0) + "M";
    if (v >= 1e4) return fixed(v / 1e3, 0) + "k";
    return fixed(v, v == std::floor(v) ? 0 : 1);
  }
  tl::plot::Canvas canvas_;
  tl::plot::Painter p_;
  int width_, height_;
  double xTop_, yTop_;
  bool xLog_;
  double left_, right_, top_, bottom_;
};

}  // namespace tl::sched::plot
