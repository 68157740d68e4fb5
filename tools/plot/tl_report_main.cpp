// tl-report: the PNG plots of tl's reports (bench/consistency, bench/study) from CSV files,
// drawn with tl's cairo plotting (tools/plot). Torch-free.
#include <algorithm>
#include <cstdio>

#include "common/check.h"
#include "common/files.h"
#include "common/cli/cli.h"
#include "tools/plot/csv_columns.h"
#include "tools/plot/line_plot.h"

namespace {

constexpr const char* kProgram = "tl-report";

constexpr const char* kSummary =
    "Draws a line plot of CSV columns as a PNG.\n"
    "Run as: tl-report plot --out FILE.png --title T --x-label X --y-label Y [--log-y] \\\n"
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

int runPlot(int argc, char** argv) {
  using namespace tl;
  std::string out;
  std::string series;
  plot::LinePlot figure;
  bool markers = false;
  int width = 900, height = 520;
  auto app = cli::makeApp(kProgram, kSummary);
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
  TL_REQUIRE(plotCommand->parsed(), "expected a command: plot (see tl-report --help)");
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
  return tl::cli::run(kProgram, [&] { return runPlot(argc, argv); });
}
