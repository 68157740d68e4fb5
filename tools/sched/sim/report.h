// tl-sim's outputs: a CSV per job and policy, the summary CSV, the table, and PNG plots drawn
// with cairo (as tl-profile's): JCT CDF per policy, GPUs allocated over time, mean JCT bars.
#pragma once

#include <string>
#include <vector>

#include "tools/sched/sim/simulator.h"

namespace tl::sched {

std::string jobsCsv(const SimResult& result);
std::string summaryCsv(const std::vector<SimSummary>& summaries, double rescaleCost);
// A fixed-width table, one row per policy, with the ratio of each mean JCT to the first row's.
std::string summaryTable(const std::vector<SimSummary>& summaries);

struct PolicyRun {
  std::string policy;
  const SimResult* result;
};
// PNG file bytes.
std::string jctCdfPng(const std::vector<PolicyRun>& runs, int width = 800, int height = 500);
std::string allocationPng(const std::vector<PolicyRun>& runs, int totalGpus, int width = 800,
                          int height = 500);
std::string meanJctBarsPng(const std::vector<PolicyRun>& runs, int width = 800, int height = 500);

// The colour each policy is drawn in (by its position in policyNames(); others grey).
struct Rgb {
  unsigned char r, g, b;
};
Rgb policyColour(const std::string& policy);

// One line of a load sweep plot: a value per load, with its spread (lo..hi, drawn as a bar).
// `policy` names the line (its colour is the policy's unless `colour` is set).
struct SweepSeries {
  std::string policy;
  std::vector<double> load, mean, lo, hi;
  bool ownColour = false;
  Rgb colour{0, 0, 0};
};
// A line per policy against offered load (sweep_plot.cpp); a dashed line at `reference` when
// it is > 0 (a ratio of 1).
std::string loadSweepPng(const std::string& title, const std::string& yLabel,
                         const std::vector<SweepSeries>& series, double reference = 0,
                         int width = 600, int height = 380);
// PNGs of equal size side by side, `columns` a row.
std::string gridPng(const std::vector<std::string>& pngs, int columns);

}  // namespace tl::sched
