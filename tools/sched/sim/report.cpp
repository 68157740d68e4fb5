#include "tools/sched/sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "common/check.h"
#include "tools/sched/sim/plot_frame.h"
#include "tools/sched/sim/policy.h"
#include "tools/submit/csv.h"

namespace tl::sched {

using plot::Frame;
using submit::fixed;

Rgb policyColour(const std::string& policy) {
  static const Rgb colours[] = {
      {214, 80, 30}, {120, 60, 170}, {40, 90, 200}, {40, 150, 60}, {200, 160, 0}, {0, 160, 170}};
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
         "mean_queueing_s,gpu_utilisation,rescales_per_job,queueing_share,"
         "arrival_window_utilisation\n";
  for (const auto& s : summaries)
    out << s.policy << ',' << fixed(rescaleCost, 1) << ',' << s.jobs << ',' << fixed(s.meanJct, 1)
        << ',' << fixed(s.medianJct, 1) << ',' << fixed(s.p99Jct, 1) << ',' << fixed(s.makespan, 1)
        << ',' << fixed(s.meanQueueing, 1) << ',' << fixed(s.utilisation, 4) << ','
        << fixed(s.rescalesPerJob, 3) << ',' << fixed(s.queueingShare, 4) << ','
        << fixed(s.windowUtilisation, 4) << '\n';
  return out.str();
}

std::string summaryTable(const std::vector<SimSummary>& summaries) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-15s %10s %10s %11s %11s %10s %6s %6s %6s %9s %9s\n", "policy",
                "mean JCT", "median", "p99 JCT", "makespan", "queueing", "queue%", "util", "util-a",
                "resc/job", "vs first");
  out << line;
  for (const auto& s : summaries) {
    const double ratio = summaries[0].meanJct / std::max(1e-9, s.meanJct);
    std::snprintf(
        line, sizeof line,
        "%-15s %9.0fs %9.0fs %10.0fs %10.0fs %9.0fs %5.1f%% %5.1f%% %5.1f%% %9.2f %8.2fx\n",
        s.policy.c_str(), s.meanJct, s.medianJct, s.p99Jct, s.makespan, s.meanQueueing,
        100 * s.queueingShare, 100 * s.utilisation, 100 * s.windowUtilisation, s.rescalesPerJob,
        ratio);
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
