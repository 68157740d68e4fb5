// tl-report: the PNG plots of tl's reports (bench/consistency, bench/study) from CSV files, and
// the picture of one run from its metrics.jsonl, drawn with tl's cairo plotting (tools/plot).
// Torch-free.
#include <algorithm>
#include <cstdio>

#include "common/check.h"
#include "common/files.h"
#include "common/cli/cli.h"
#include "tools/plot/csv_columns.h"
#include "tools/plot/line_plot.h"
#include "tools/plot/run_report.h"

namespace {

constexpr const char* kProgram = "tl-report";

constexpr const char* kSummary =
    "Draws a line plot of CSV columns, or the picture of one run, as a PNG.\n"
    "Run as: tl-report run OUTDIR --out run.png    (OUTDIR: a tl-launch --output-dir)\n"
    "    or: tl-report plot --out FILE.png --title T --x-label X --y-label Y [--log-y] \\\n"
    "            --series 'LABEL=FILE.csv:XCOLUMN:YCOLUMN;LABEL=FILE.csv:XCOLUMN:YCOLUMN;...'\n"
    "Each CSV has a header row; empty cells are missing values. A series whose label ends in\n"
    "' *' is drawn dashed (the mark is not shown); --markers puts a dot on every point.";

// "LABEL=FILE:X:Y" (FILE may contain ':' and '='; LABEL may not contain '=').
tl::plot::Series readSeries(const std::string& spec, bool markers) {
  const size_t eq = spec.find('=');
  const size_t yColon = spec.rfind(':');
  const size_t xColon =
      yColon == std::string::npos || yColon == 0 ? std::string::npos : spec.rfind(':', yColon - 1);
  TL_REQUIRE(eq != std::string::npos && xColon != std::string::npos && xColon > eq, "series '",
             spec, "': expected LABEL=FILE.csv:XCOLUMN:YCOLUMN");
  tl::plot::Series s;
  s.label = spec.substr(0, eq);
  const std::string path = spec.substr(eq + 1, xColon - eq - 1);
  const tl::plot::CsvColumns csv(tl::readFile(path), path);
  const auto xs = csv.column(spec.substr(xColon + 1, yColon - xColon - 1));
  const auto ys = csv.column(spec.substr(yColon + 1));
  if (s.label.size() > 2 && s.label.compare(s.label.size() - 2, 2, " *") == 0) {
    s.label.resize(s.label.size() - 2);
    s.dashed = true;
  }
  s.markers = markers;
  for (size_t i = 0; i < xs.size(); ++i) s.points.emplace_back(xs[i], ys[i]);
  return s;
}

int runReport(int argc, char** argv) {
  using namespace tl;
  std::string out;
  std::string series;
  plot::LinePlot figure;
  bool markers = false;
  int width = 900, height = 520;
  std::string runDir, runOut;
  int runWidth = 1100, panelHeight = 330;
  auto app = cli::makeApp(kProgram, kSummary);
  auto* runCommand = app->add_subcommand(
      "run", "one run's loss, evaluation loss, learning rate, gradient norm and samples/s against "
             "the step, its rescales, re-plans, lost ranks and recoveries marked");
  runCommand->add_option("outdir", runDir, "the run's output folder (holds metrics.jsonl)");
  runCommand->add_option("--out", runOut, "the PNG to write (default OUTDIR/run.png)");
  cli::addInt(*runCommand, "--width", &runWidth, "pixels", 400, 4000);
  cli::addInt(*runCommand, "--panel-height", &panelHeight, "pixels of each panel", 200, 2000);
  auto* plotCommand = app->add_subcommand("plot", "a line plot of CSV columns");
  plotCommand->add_option("--out", out, "the PNG to write (required)");
  plotCommand->add_option("--title", figure.title, "title above the plot");
  plotCommand->add_option("--x-label", figure.xLabel, "x axis label");
  plotCommand->add_option("--y-label", figure.yLabel, "y axis label");
  plotCommand->add_option("--series", series,
                          "LABEL=FILE.csv:XCOLUMN:YCOLUMN, one per series, separated by ';'");
  plotCommand->add_flag("--log-y", figure.logY, "logarithmic y axis (values <= 0 left out)");
  plotCommand->add_flag("--markers", markers, "a dot on every point");
  cli::addInt(*plotCommand, "--width", &width, "pixels", 300, 4000);
  cli::addInt(*plotCommand, "--height", &height, "pixels", 200, 4000);
  if (!cli::parse(*app, argc, argv)) return cli::kExitOk;
  if (runCommand->parsed()) {
    TL_REQUIRE(!runDir.empty(), "run: give the run's output folder (tl-report run OUTDIR)");
    const std::string metrics = runDir + "/metrics.jsonl";
    TL_REQUIRE(fileExists(metrics), "run: '", runDir, "' has no metrics.jsonl (is it a tl-launch --output-dir?)");
    if (runOut.empty()) runOut = runDir + "/run.png";
    const plot::RunCurves curves = plot::readRunCurves(readFile(metrics), metrics);
    writeFileAtomic(runOut, plot::renderPanelsPng(plot::runPanels(curves), runWidth, panelHeight));
    std::printf("%s\n", runOut.c_str());
    return cli::kExitOk;
  }
  TL_REQUIRE(plotCommand->parsed(), "expected a command: run or plot (see tl-report --help)");
  TL_REQUIRE(!out.empty(), "--out: required (the PNG to write)");
  TL_REQUIRE(!series.empty(), "--series: give at least one LABEL=FILE.csv:XCOLUMN:YCOLUMN");
  for (size_t start = 0; start <= series.size();) {
    const size_t end = std::min(series.find(';', start), series.size());
    figure.series.push_back(readSeries(series.substr(start, end - start), markers));
    start = end + 1;
  }
  writeFileAtomic(out, plot::renderLinePlotPng(figure, width, height));
  std::printf("%s\n", out.c_str());
  return cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return runReport(argc, argv); });
}
