// tl-report's line plots: drawn with cairo, decoded back from the PNG, checked for the series in
// their colours; the CSV columns behind them, with bad input named by file, row and column.
#include <gtest/gtest.h>

#include <cmath>

#include "common/check.h"
#include "common/files.h"
#include "tools/plot/csv_columns.h"
#include "tools/plot/line_plot.h"
#include "tests/support/png_check.h"
#include "tests/support/run_command.h"

namespace {

using namespace tl::plot;

size_t pixelsOf(const tl::testing::DecodedPng& png, Colour c) { return png.count(c.r, c.g, c.b); }

tl::testing::DecodedPng render(const LinePlot& plot, const std::string& name) {
  const std::string path = tl::testing::freshDir("line_plot_" + name) + "/plot.png";
  tl::writeFileAtomic(path, renderLinePlotPng(plot, 700, 420));
  return tl::testing::decodePng(path);
}

Series ramp(const std::string& label, double slope, int n = 50) {
  Series s{label, {}};
  for (int i = 0; i < n; ++i) s.points.emplace_back(i, 1 + slope * i);
  return s;
}

TEST(LinePlot, EverySeriesIsDrawnInItsColour) {
  LinePlot plot{"two lines", "step", "loss", false, {ramp("a", 0.5), ramp("b", -0.01)}};
  auto png = render(plot, "two");
  ASSERT_TRUE(png.ok) << png.error;
  EXPECT_EQ(png.width, 700);
  EXPECT_EQ(png.height, 420);
  EXPECT_GT(pixelsOf(png, seriesColours()[0]), 300u);
  EXPECT_GT(pixelsOf(png, seriesColours()[1]), 300u);
  EXPECT_EQ(pixelsOf(png, seriesColours()[2]), 0u) << "no third series";
  EXPECT_GT(png.count(0, 0, 0), 500u) << "axes and labels";
}

TEST(LinePlot, LogAxisLeavesOutNonPositiveValues) {
  Series zeros{"zero", {}};
  for (int i = 0; i < 50; ++i) zeros.points.emplace_back(i, 0.0);
  Series tiny{"tiny", {}};
  for (int i = 0; i < 50; ++i) tiny.points.emplace_back(i, std::pow(10.0, -8 + i / 10.0));
  LinePlot plot{"log", "step", "rel", true, {tiny, zeros}};
  auto png = render(plot, "log");
  ASSERT_TRUE(png.ok) << png.error;
  EXPECT_GT(pixelsOf(png, seriesColours()[0]), 300u);
  EXPECT_LT(pixelsOf(png, seriesColours()[1]), 200u)
      << "only its legend entry: zeros have no place on a log axis";
  LinePlot onlyZeros{"nothing", "x", "y", true, {zeros}};
  EXPECT_THROW(renderLinePlotPng(onlyZeros), tl::InputError);
}

TEST(CsvColumns, ReadsNamedColumnsWithMissingCells) {
  CsvColumns csv("step,loss,acc\n1,2.5,\n2,2.25,0.5\n", "m.csv");
  EXPECT_EQ(csv.rows(), 2u);
  EXPECT_EQ(csv.column("loss"), (std::vector<double>{2.5, 2.25}));
  auto acc = csv.column("acc");
  EXPECT_TRUE(std::isnan(acc[0]));
  EXPECT_EQ(acc[1], 0.5);
}

TEST(CsvColumns, BadInputNamesFileRowAndColumn) {
  auto message = [](const std::string& text, const std::string& column) {
    try {
      CsvColumns(text, "m.csv").column(column);
    } catch (const tl::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("step,loss\n1,x\n", "loss")
                .find("m.csv: data row 1, column 'loss': expected a number, got 'x'"),
            std::string::npos);
  EXPECT_NE(message("step,loss\n1,2\n", "acc").find("no column 'acc' (columns: step, loss)"),
            std::string::npos);
  EXPECT_NE(message("step,loss\n1,2,3\n", "loss").find("m.csv:2: 3 cells, but the header has 2"),
            std::string::npos);
  EXPECT_NE(message("", "loss").find("no header row"), std::string::npos);
}

}  // namespace
