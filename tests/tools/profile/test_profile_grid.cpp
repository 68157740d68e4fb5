// tl-profile's memory dimension: the 2-D prediction from a worker sweep and a cache profile on
// synthetic curves with known answers, the cache figures read from a burst's metrics.jsonl,
// the (cores, memory) recommendation, the CSV and the heat map PNG.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "dataload/sample_cache.h"
#include "tools/profile/heat_map.h"
#include "tools/profile/profile_grid.h"
#include "tools/submit/csv.h"
#include "tests/support/png_check.h"
#include "tests/support/run_command.h"

namespace tl::profile {
namespace {

// The truth: a = 1 ms, b = 10 ms fully cached, C = 300/s; a miss reads 100 kB at 100 ns/B
// (10 ms); the data set takes 8 MiB in the cache.
constexpr double kA = 0.001, kB = 0.010, kC = 300, kRead = 0.010, kDataMiB = 8;

double truth(int w, double cacheMb) {
  const double miss = std::clamp(1 - cacheMb / kDataMiB, 0.0, 1.0);
  return std::min(kC, w / (kA * w + kB + miss * kRead));
}

BurstMeasurement burst(int w) {
  BurstMeasurement b;
  b.workers = w;
  b.exitCode = 0;
  b.imagesPerSecond = truth(w, kDataMiB);
  b.waitShare = b.imagesPerSecond < kC - 1e-9 ? 0.3 : 0.0;
  return b;
}

GridProfile syntheticProfile() {
  GridProfile p;
  p.fit = fitProfile({burst(1), burst(2), burst(4), burst(8)});
  p.dimension.measured = true;
  p.dimension.cache.datasetBytes = double(data::cacheMiB(kDataMiB));
  p.dimension.cache.sampleBytes = 1e5;
  p.dimension.cache.storageSecondsPerByte = kRead / 1e5;
  p.dimension.cache.fittedMissShare = 0;
  return p;
}

TEST(ProfileGrid, PredictsTheKnownSurfaceFromTheSweepAtTheFullBudget) {
  const GridProfile p = syntheticProfile();
  ASSERT_TRUE(p.fit.fitted);
  EXPECT_NEAR(p.fit.model.a, kA, 1e-6);
  EXPECT_NEAR(p.fit.model.b, kB, 1e-6);
  const std::vector<int> workers{1, 2, 4, 8};
  const std::vector<double> cacheMb{0, 2, 4, 6, 8};
  const auto cells = predictGrid(p, workers, cacheMb);
  ASSERT_EQ(cells.size(), 20u);
  for (const GridCell& c : cells) {
    EXPECT_NEAR(c.predicted, truth(c.workers, c.cacheMb), 1e-3 * truth(c.workers, c.cacheMb))
        << c.workers << " workers, " << c.cacheMb << " MiB";
  }
  // The smallest (cores, memory) within 2% of the best, by brute force on the truth.
  double best = 0;
  for (int w : workers)
    for (double m : cacheMb) best = std::max(best, truth(w, m));
  int wantW = -1;
  double wantM = -1;
  for (int w : workers) {
    for (double m : cacheMb) {
      if (wantW < 0 && truth(w, m) >= 0.98 * best) {
        wantW = w;
        wantM = m;
      }
    }
  }
  const int chosen = recommendCell(cells, 0.02);
  ASSERT_GE(chosen, 0);
  EXPECT_EQ(cells[size_t(chosen)].workers, wantW);
  EXPECT_EQ(cells[size_t(chosen)].cacheMb, wantM);
  EXPECT_EQ(wantW, 8);
  EXPECT_EQ(wantM, 2);
}

TEST(ProfileGrid, AFitFromJobRatesScalesTheReadTimeToTheProcess) {
  GridProfile p = syntheticProfile();
  p.perProcess = 2;  // two processes: each job image costs half a process read
  const double expected = std::min(kC, 1 / (kA + kB + 0.5 * kRead));
  EXPECT_NEAR(p.predict(1, 0), expected, 1e-6 * expected);
}

TEST(ProfileGrid, CacheFiguresComeFromTheBurstsEpochRecords) {
  const std::string dir = tl::testing::freshDir("profile_grid_metrics");
  std::ofstream(dir + "/metrics.jsonl")
      << R"({"type":"step","step":1})" "\n"
      << R"({"type":"epoch","epoch":0,"cache":{"hits":0,"misses":100,"bytes_from_storage":1000000,)"
         R"("bytes_from_cache":0,"storage_s":0.5,"samples":100}})" "\n"
      << R"({"type":"epoch","epoch":1,"cache":{"hits":75,"misses":25,"bytes_from_storage":250000,)"
         R"("bytes_from_cache":750000,"storage_s":0.125,"samples":100}})" "\n";
  const CacheDimension d = readCacheDimension(dir, FittedReads::SteadyWindow, true);
  ASSERT_TRUE(d.measured) << d.note;
  EXPECT_TRUE(d.warm);
  EXPECT_DOUBLE_EQ(d.cache.sampleBytes, 10000);
  EXPECT_DOUBLE_EQ(d.cache.storageSecondsPerByte, 0.625 / 1250000);
  EXPECT_DOUBLE_EQ(d.steadyMissShare, 0.25) << "epochs after the first";
  EXPECT_DOUBLE_EQ(d.cache.fittedMissShare, 0.25) << "a rate measured after the first epoch";
  EXPECT_DOUBLE_EQ(d.cache.datasetBytes, 100 * (10000.0 + data::SampleCache::kEntryOverhead));
  // A fit from loader measurements saw every read of the burst: 125 misses of 200.
  EXPECT_DOUBLE_EQ(readCacheDimension(dir, FittedReads::WholeBurst, true).cache.fittedMissShare,
                   0.625);
  // A rate window that began in the first epoch: its reads are the whole burst's too.
  EXPECT_DOUBLE_EQ(readCacheDimension(dir, FittedReads::SteadyWindow, false).cache.fittedMissShare,
                   0.625);

  const std::string empty = tl::testing::freshDir("profile_grid_empty");
  std::ofstream(empty + "/metrics.jsonl") << R"({"type":"epoch","epoch":0})" "\n";
  EXPECT_FALSE(readCacheDimension(empty, FittedReads::WholeBurst, false).measured);
  EXPECT_NE(readCacheDimension(empty, FittedReads::WholeBurst, false).note.find("--cache-mb"),
            std::string::npos);
}

// A burst that never left its first epoch saw only first reads: the steady miss share is the
// cache model's (budget / data set), marked cold, and the fit's is 1.
TEST(ProfileGrid, ColdBurstsTakeTheSteadyMissShareFromTheCacheModel) {
  const std::string dir = tl::testing::freshDir("profile_grid_cold");
  std::ofstream(dir + "/metrics.jsonl")
      << R"({"type":"epoch","epoch":0,"partial":true,"cache":{"hits":0,"misses":60,)"
         R"("bytes_from_storage":600000,"bytes_from_cache":0,"storage_s":0.3,"samples":100,)"
         R"("budget_bytes":)"
      << 0.4 * 100 * (10000.0 + data::SampleCache::kEntryOverhead) << "}}\n";
  const CacheDimension d = readCacheDimension(dir, FittedReads::SteadyWindow, false);
  ASSERT_TRUE(d.measured) << d.note;
  EXPECT_FALSE(d.warm);
  EXPECT_NEAR(d.steadyMissShare, 0.6, 1e-9);
  EXPECT_DOUBLE_EQ(d.cache.fittedMissShare, 1.0);
}

TEST(ProfileGrid, CsvAndHeatMap) {
  const GridProfile p = syntheticProfile();
  auto cells = predictGrid(p, {1, 2, 4, 8}, {0, 4, 8});
  cells[5].measured = cells[5].predicted * 0.9;
  const auto rows = tl::submit::parseCsv(gridCsv(cells), "grid");
  ASSERT_EQ(rows.size(), 13u);
  EXPECT_EQ(rows[0].fields[0], "workers");
  EXPECT_EQ(rows[6].fields[0], "2");
  EXPECT_EQ(rows[6].fields[1], "4.000");
  EXPECT_NEAR(std::stod(rows[6].fields[4]), 1 / 0.9 - 1, 1e-3);
  EXPECT_TRUE(rows[1].fields[3].empty()) << "not measured";

  const int chosen = recommendCell(cells, 0.02);
  const std::string path = tl::testing::freshDir("profile_grid_png") + "/profile_2d.png";
  writeHeatMapPng(cells, chosen, path);
  auto png = tl::testing::decodePng(path);
  ASSERT_TRUE(png.ok) << png.error;
  EXPECT_EQ(png.width, 800);
  EXPECT_EQ(png.height, 500);
  EXPECT_GE(png.distinctColours(), 12) << "cells shaded by their rate";
  EXPECT_GT(png.inkShare(), 0.3);
  bool green = false;
  for (size_t i = 0; i + 2 < png.rgb.size() && !green; i += 3)
    green = png.rgb[i] == 40 && png.rgb[i + 1] == 150 && png.rgb[i + 2] == 60;
  EXPECT_TRUE(green) << "the recommended cell is outlined";
  // The check's mark sits in its own cell (2 workers: the second column of 170 px from x = 100;
  // 4 MiB: the middle row of 125 px above y = 425), and nowhere else on the grid.
  int inCell = 0, elsewhere = 0;
  for (int y = 50; y < 425; ++y) {
    for (int x = 100; x < 780; ++x) {
      const size_t i = 3 * (size_t(y) * size_t(png.width) + size_t(x));
      if (png.rgb[i] != 214 || png.rgb[i + 1] != 80 || png.rgb[i + 2] != 30) continue;
      const bool mine = x >= 270 && x < 440 && y >= 175 && y < 300;
      (mine ? inCell : elsewhere)++;
    }
  }
  EXPECT_GT(inCell, 20) << "the check point is drawn in its cell";
  EXPECT_EQ(elsewhere, 0);
  EXPECT_GT(png.count(214, 80, 30), size_t(inCell)) << "and again in the legend under the grid";
}

}  // namespace
}  // namespace tl::profile
