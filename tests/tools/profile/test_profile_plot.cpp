// tl-profile's picture: drawn with cairo, decoded back from the PNG file, and checked for what a
// reader needs to see: axes, the measured points, the model curve and the recommendation in
// their colours, anti-aliased edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "common/check.h"
#include "tools/profile/throughput_plot.h"
#include "tests/support/png_check.h"
#include "tests/support/run_command.h"

namespace {

using namespace tl::profile;

size_t pixelsOf(const tl::testing::DecodedPng& png, PlotColour c) {
  return png.count(c.r, c.g, c.b);
}

TEST(Plot, NiceTickSteps) {
  EXPECT_DOUBLE_EQ(niceTickStep(1000, 6), 200);
  EXPECT_DOUBLE_EQ(niceTickStep(7, 10), 1);
  EXPECT_DOUBLE_EQ(niceTickStep(0.3, 6), 0.05);
}

ThroughputPlot examplePlot() {
  ThroughputPlot plot;
  plot.measured = {{0, 80}, {1, 120}, {2, 210}, {4, 250}};
  for (int i = 0; i <= 30; ++i) {
    double w = 1 + 3.0 * i / 30;
    plot.model.push_back({w, std::min(255.0, w / (0.0008 * w + 0.008))});
  }
  plot.modelAtZero = 75;
  plot.recommended = 3;
  return plot;
}

TEST(Plot, PngDecodesBackWithAxesPointsCurveAndRecommendation) {
  const std::string bytes = renderThroughputPng(examplePlot(), 640, 400);
  ASSERT_TRUE(tl::testing::hasPngSignature(bytes));
  auto path = tl::testing::freshDir("profile_plot") + "/plot.png";
  writeThroughputPng(examplePlot(), path, 640, 400);
  {
    std::ifstream in(path, std::ios::binary);
    std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(written, bytes) << "the file holds exactly the rendered PNG";
  }
  auto png = tl::testing::decodePng(path);
  ASSERT_TRUE(png.ok) << png.error;
  EXPECT_EQ(png.width, 640);
  EXPECT_EQ(png.height, 400);
  EXPECT_GT(png.inkShare(), 0.02) << "the plot is blank";
  EXPECT_LT(png.inkShare(), 0.6);
  EXPECT_GE(png.distinctColours(), 20) << "anti-aliased edges and text blend colours";
  EXPECT_GT(png.count(0, 0, 0), 800u) << "black axes (two 2-pixel lines) and labels";

  // Four measured dots of radius 6 (~110 pixels inside each) and the legend's dot.
  EXPECT_GT(pixelsOf(png, kMeasuredColour), 4 * 80u);
  // A 3-pixel model curve across three worker counts, the w = 0 square and the legend line.
  EXPECT_GT(pixelsOf(png, kModelColour), 300u);
  // The recommendation: a dashed 2-pixel vertical line at w = 3. The x axis spans 0..4 over
  // pixels 105..595 (axis at 90, 15-pixel inset, right edge 610), so w = 3 is at 472.5.
  const auto& c = kRecommendedColour;
  const std::vector<int> columns = png.columnsWith(c.r, c.g, c.b, 60);
  ASSERT_FALSE(columns.empty()) << "no recommendation line";
  EXPECT_GE(columns.front(), 470);
  EXPECT_LE(columns.back(), 476);
}

TEST(Plot, WithoutModelOrRecommendationOnlyTheMeasuredSeriesIsDrawn) {
  ThroughputPlot plot;
  plot.measured = {{0, 50}, {2, 90}};
  auto path = tl::testing::freshDir("profile_plot_bare") + "/plot.png";
  writeThroughputPng(plot, path);
  auto png = tl::testing::decodePng(path);
  ASSERT_TRUE(png.ok) << png.error;
  EXPECT_EQ(png.width, 800);
  EXPECT_EQ(png.height, 500);
  EXPECT_GT(pixelsOf(png, kMeasuredColour), 2 * 80u);
  EXPECT_EQ(pixelsOf(png, kModelColour), 0u);
  EXPECT_EQ(pixelsOf(png, kRecommendedColour), 0u);
}

TEST(Plot, AnUnwritablePathIsAnInputErrorNamingIt) {
  try {
    writeThroughputPng(examplePlot(), "/proc/no-such-dir/plot.png");
    ADD_FAILURE() << "no error";
  } catch (const tl::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no-such-dir/plot.png"), std::string::npos)
        << e.what();
  }
}

}  // namespace
