// tl-report run: a picture of one job's run from its metrics.jsonl: training loss (and the
// validation or test loss where the job evaluated), learning rate, gradient norm and samples per
// second against the step, with the job's changes of shape (rescales, re-plans, lost ranks and
// recoveries) drawn as marked vertical lines, so that a reader sees where the job changed and
// that the curves did not notice. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "tools/plot/line_plot.h"

namespace tl::plot {

// What a run's metrics.jsonl holds for the picture.
struct RunCurves {
  std::vector<std::pair<double, double>> loss;        // (step, training loss)
  std::vector<std::pair<double, double>> evalLoss;    // (step, val_loss or an epoch's test_loss)
  std::string evalLabel;                              // "validation loss" or "test loss"
  std::vector<std::pair<double, double>> lr;          // (step, learning rate)
  std::vector<std::pair<double, double>> gradNorm;    // (step, norm before clipping)
  std::vector<std::pair<double, double>> throughput;  // (step, samples/s)
  std::vector<VerticalMark> events;                   // rescale, plan, failure, recovery
};

// Parses a metrics.jsonl's text (`path` names it in errors). InputError naming the file and line
// for a line that is not a JSON object with a "type", and when no step record is there.
RunCurves readRunCurves(const std::string& text, const std::string& path);

// The panels: loss (with the evaluation's when there is one), learning rate, gradient norm (when
// recorded), samples/s; every panel carries the events.
std::vector<Panel> runPanels(const RunCurves& curves);

}  // namespace tl::plot
