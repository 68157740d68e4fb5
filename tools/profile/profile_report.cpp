#include "tools/profile/profile_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "tools/profile/throughput_plot.h"

namespace tl::profile {
namespace {

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

bool modelled(const ProfileResult& r, const BurstMeasurement&) { return r.fit.fitted; }

}  // namespace

ProfileResult analyseSweep(std::vector<BurstMeasurement> bursts, double tolerance) {
  ProfileResult r;
  r.bursts = std::move(bursts);
  r.tolerance = tolerance;
  r.fit = fitProfile(r.bursts);
  r.recommended = recommendWorkers(candidateRates(r.fit, r.bursts), tolerance);
  return r;
}

std::string profileTable(const ProfileResult& r) {
  std::string out = "workers  measured images/s  modelled images/s  wait share  status\n";
  for (const auto& b : r.bursts) {
    char row[256];
    std::snprintf(row, sizeof row, "%7d  %17s  %17s  %10s  %s\n", b.workers,
                  b.ok() ? fixed(b.imagesPerSecond, 1).c_str() : "-",
                  modelled(r, b) ? fixed(r.fit.jobRate(b.workers), 1).c_str() : "-",
                  b.ok() ? (fixed(100 * b.waitShare, 1) + "%").c_str() : "-",
                  b.ok() ? "ok" : b.note.c_str());
    out += row;
  }
  if (r.fit.fitted) {
    const auto& m = r.fit.model;
    out += "model: rate(w) = " +
           (r.fit.jobScale != 1 ? fixed(r.fit.jobScale, 3) + " * " : std::string()) +
           "min(C, w / (a*w + b)), a = " + fixed(m.a, 6) + " s, b = " + fixed(m.b, 6) +
           " s, C = " + fixed(m.computeRate, 1) + " images/s (fitted from " + r.fit.source + ")\n";
  } else {
    out += "model: not fitted (no successful burst with workers > 0)\n";
  }
  if (r.recommended >= 0) {
    out += "recommended workers: " + std::to_string(r.recommended) + " (the smallest within " +
           fixed(100 * r.tolerance, 0) + "% of the best " +
           (r.fit.fitted ? "predicted" : "measured") + " throughput)\n";
  } else {
    out += "recommended workers: none (every burst failed)\n";
  }
  return out;
}

std::string profileCsv(const ProfileResult& r) {
  std::string out =
      "workers,measured_images_per_s,modelled_images_per_s,data_wait_share,warmup_excluded,exit_"
      "status\n";
  for (const auto& b : r.bursts) {
    out += std::to_string(b.workers) + ",";
    out += (b.ok() ? fixed(b.imagesPerSecond, 3) : "") + ",";
    out += (modelled(r, b) ? fixed(r.fit.jobRate(b.workers), 3) : "") + ",";
    out += (b.ok() ? fixed(b.waitShare, 4) : "") + ",";
    out += std::string(b.ok() ? (b.warmupExcluded ? "1" : "0") : "") + ",";
    out += std::to_string(b.exitCode) + "\n";
  }
  return out;
}

std::string profileJson(const ProfileResult& r) {
  nlohmann::json j;
  j["recommended_workers"] = r.recommended;
  j["tolerance"] = r.tolerance;
  j["fitted"] = r.fit.fitted;
  if (r.fit.fitted) {
    j["model"] = {{"a", r.fit.model.a},
                  {"b", r.fit.model.b},
                  {"compute_rate", std::isfinite(r.fit.model.computeRate)
                                       ? nlohmann::json(r.fit.model.computeRate)
                                       : nlohmann::json(nullptr)},
                  {"job_scale", r.fit.jobScale},
                  {"source", r.fit.source}};
  }
  return j.dump(2) + "\n";
}

void writeProfileFiles(const ProfileResult& r, const std::string& dir) {
  writeFileAtomic(joinPath(dir, "profile.csv"), profileCsv(r));
  writeFileAtomic(joinPath(dir, "profile.json"), profileJson(r));
  ThroughputPlot plot;
  int maxWorkers = 1;
  for (const auto& b : r.bursts) {
    maxWorkers = std::max(maxWorkers, b.workers);
    if (b.ok()) plot.measured.push_back({double(b.workers), b.imagesPerSecond});
  }
  if (r.fit.fitted) {
    // Worker counts are whole: the curve runs over w >= 1, and w = 0 (the training thread
    // loading, predicted by another formula) is a point of its own.
    constexpr int kSamples = 200;
    for (int i = 0; i <= kSamples && maxWorkers >= 1; ++i) {
      double w = 1 + double(maxWorkers - 1) * i / kSamples;
      plot.model.push_back({w, r.fit.jobRate(w)});
    }
    bool sweptZero = false;
    for (const auto& b : r.bursts) sweptZero |= b.workers == 0;
    if (sweptZero) plot.modelAtZero = r.fit.jobRate(0);
  }
  plot.recommended = r.recommended;
  writeThroughputPng(plot, joinPath(dir, "profile.png"));
}

}  // namespace tl::profile
