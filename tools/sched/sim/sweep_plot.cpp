// bench_scheduler --sweep's plots: a line per policy against offered load, panels in a grid.
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

std::string gridPng(const std::vector<std::string>& pngs, int columns) {
  return tl::plot::tilePngs(pngs, columns);
}

}  // namespace tl::sched
