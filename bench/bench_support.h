// Shared by the benchmarks that drive real tl-launch jobs: run commands, read what the jobs
// wrote, and time steps from metrics.jsonl.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_stats.h"  // medians with confidence intervals, alternating rounds

namespace tl::bench {

inline std::string binDir() { return TL_BIN_DIR; }

// `mpirun` with the flags a shared or root-run machine needs.
inline std::string mpirun(int np) {
  std::string cmd = std::string(TL_MPIEXEC) + " --oversubscribe --bind-to none";
  if (geteuid() == 0) cmd += " --allow-run-as-root";
  return cmd + " -np " + std::to_string(np) + " ";
}

inline void runOrDie(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::fprintf(stderr, "benchmark: command failed (%d): %s\n", rc, cmd.c_str());
    std::exit(1);
  }
}

inline nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// Wall-clock end time of every step record in <dir>/metrics.jsonl, in order.
inline std::vector<double> stepTimes(const std::string& dir) {
  std::vector<double> out;
  std::ifstream in(dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "step") out.push_back(j["time"].get<double>());
  }
  return out;
}

// The median (the mean of the two middle values of an even count); 0 for none.
inline double middleOf(std::vector<double> d) {
  if (d.empty()) return 0;
  std::sort(d.begin(), d.end());
  const size_t n = d.size();
  return n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2]);
}

// Median duration of the steps after the first `skip` (warm-up, the first step's replay).
inline double medianStepSeconds(const std::string& dir, size_t skip) {
  auto t = stepTimes(dir);
  std::vector<double> d;
  for (size_t i = std::max<size_t>(skip, 1); i < t.size(); ++i) d.push_back(t[i] - t[i - 1]);
  return middleOf(std::move(d));
}

// The records of one type ("step", "rescale", "plan", ...) in <dir>/metrics.jsonl, in order.
inline std::vector<nlohmann::json> metricsRecords(const std::string& dir, const std::string& type) {
  std::vector<nlohmann::json> out;
  std::ifstream in(dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == type) out.push_back(j);
  }
  return out;
}

// End time of each step, by step number (a recomputed step: its last record).
inline std::map<int, double> stepEnds(const std::string& dir) {
  std::map<int, double> out;
  for (const auto& j : metricsRecords(dir, "step")) out[j["step"].get<int>()] = j["time"].get<double>();
  return out;
}

// Median duration of steps first..last, each from the previous step's end.
inline double medianStep(const std::map<int, double>& ends, int first, int last) {
  std::vector<double> d;
  for (int s = first; s <= last; ++s) {
    auto a = ends.find(s - 1), b = ends.find(s);
    if (a != ends.end() && b != ends.end()) d.push_back(b->second - a->second);
  }
  return middleOf(std::move(d));
}

// A scratch folder for one benchmark, emptied first.
inline std::string scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tl-bench-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::string synthData(const std::string& root, int train) {
  std::string dir = root + "/data";
  runOrDie(binDir() + "/tl-data synth --out " + dir + " --train " + std::to_string(train) +
           " --test 16 --seed 1 >/dev/null");
  return dir;
}

}  // namespace tl::bench
