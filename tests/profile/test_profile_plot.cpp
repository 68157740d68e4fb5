// tl-profile's picture: the rasteriser, the bitmap font, and a PNG that libpng decodes back.
#include <gtest/gtest.h>

#include <fstream>

#include "launcher/profile/bitmap_font.h"
#include "launcher/profile/canvas.h"
#include "launcher/profile/png_writer.h"
#include "launcher/profile/throughput_plot.h"
#include "tests/profile/png_check.h"
#include "tests/support/run_command.h"

namespace {

using namespace tl::profile;

const Rgb kWhite{255, 255, 255}, kRed{255, 0, 0};

TEST(Canvas, LinesCirclesAndClipping) {
  Canvas c(20, 10, kWhite);
  c.line(0, 5, 19, 5, kRed);
  for (int x = 0; x < 20; ++x) EXPECT_EQ(c.at(x, 5), kRed) << x;
  EXPECT_EQ(c.at(0, 4), kWhite);
  c.line(-50, -50, 100, 100, kRed, 3);  // far outside: clipped, no crash
  c.fillCircle(10, 2, 1.5, kRed);
  EXPECT_EQ(c.at(10, 2), kRed);
  EXPECT_EQ(c.at(10, 0), kWhite) << "radius 1.5 does not reach 2 pixels up";
  Canvas dashed(20, 3, kWhite);
  dashed.line(0, 1, 19, 1, kRed, 1, 4);
  EXPECT_EQ(dashed.at(0, 1), kRed);
  EXPECT_EQ(dashed.at(5, 1), kWhite);
  EXPECT_EQ(dashed.at(8, 1), kRed);
}

TEST(Canvas, TextUsesTheBitmapFont) {
  Canvas c(40, 20, kWhite);
  c.text(1, 1, "1", kRed, 2);
  const Glyph& one = glyphFor('1');
  for (int row = 0; row < kGlyphHeight; ++row) {
    for (int col = 0; col < kGlyphWidth; ++col) {
      bool on = one[size_t(row)] & (0x10 >> col);
      EXPECT_EQ(c.at(1 + 2 * col, 1 + 2 * row), on ? kRed : kWhite) << row << "," << col;
    }
  }
  EXPECT_EQ(&glyphFor('a'), &glyphFor('A')) << "lower case is drawn as upper case";
  EXPECT_EQ(Canvas::textWidth("ab", 2), 22);
  Canvas up(20, 40, kWhite);
  up.textUp(2, 30, "I", kRed, 1);  // 'I': top row 0x0E -> columns 1..3 of row 0
  EXPECT_EQ(up.at(2, 30 - 1), kRed);
  EXPECT_EQ(up.at(2, 30 - 0), kWhite);
}

TEST(Plot, NiceTickSteps) {
  EXPECT_DOUBLE_EQ(niceTickStep(1000, 6), 200);
  EXPECT_DOUBLE_EQ(niceTickStep(7, 10), 1);
  EXPECT_DOUBLE_EQ(niceTickStep(0.3, 6), 0.05);
}

TEST(Plot, PngDecodesBackWithAxesPointsAndCurve) {
  ThroughputPlot plot;
  plot.measured = {{0, 80}, {1, 120}, {2, 210}, {4, 250}};
  for (int i = 0; i <= 30; ++i) {
    double w = 1 + 3.0 * i / 30;
    plot.model.push_back({w, std::min(255.0, w / (0.0008 * w + 0.008))});
  }
  plot.modelAtZero = 75;
  plot.recommended = 3;
  Canvas canvas = drawThroughputPlot(plot, 640, 400);
  std::string bytes = encodePng(canvas);
  ASSERT_TRUE(tl::testing::hasPngSignature(bytes));
  auto path = tl::testing::freshDir("profile_plot") + "/plot.png";
  writePng(canvas, path);
  auto png = tl::testing::decodePng(path);
  ASSERT_TRUE(png.ok) << png.error;
  EXPECT_EQ(png.width, 640);
  EXPECT_EQ(png.height, 400);
  EXPECT_EQ(png.rgb, canvas.pixels());
  EXPECT_GE(png.distinctColours(), 5) << "background, axes, grid, points, curve";
  EXPECT_GT(png.inkShare(), 0.02);
  EXPECT_LT(png.inkShare(), 0.6);
}

}  // namespace
