// tl-report run: a run's metrics.jsonl read into curves and events (bad lines named by file and
// line), drawn as stacked panels with every event a marked line in its colour, and the command
// itself on a real output folder and on bad ones.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/check.h"
#include "common/files.h"
#include "tests/support/png_check.h"
#include "tests/support/run_command.h"
#include "tools/plot/run_report.h"

namespace {

using namespace tl::plot;

// Twelve steps over two epochs; a rescale at 4, a re-plan at 6, a rank lost at 8 and the job
// recovered at 9; the first epoch evaluated.
std::string metricsText(bool withEvents) {
  std::string t;
  for (int step = 1; step <= 12; ++step) {
    const int epoch = step <= 6 ? 0 : 1;
    t += "{\"type\":\"step\",\"step\":" + std::to_string(step) + ",\"epoch\":" + std::to_string(epoch) +
         ",\"loss\":" + std::to_string(3.0 - 0.1 * step) + ",\"lr\":" + std::to_string(0.01 * step) +
         ",\"grad_norm\":" + std::to_string(1.0 + step) + ",\"images_per_s\":" + std::to_string(100 + step) + "}\n";
    if (step == 6) t += "{\"type\":\"epoch\",\"epoch\":0,\"steps\":6,\"loss\":2.6,\"test_loss\":2.5}\n";
    if (!withEvents) continue;
    if (step == 4) t += "{\"type\":\"rescale\",\"step\":4,\"from\":\"2,2\",\"to\":\"4\",\"pause_s\":0.1}\n";
    if (step == 6) t += "{\"type\":\"plan\",\"step\":6,\"placement\":\"3,1\",\"window_steps\":2}\n";
    if (step == 8) {
      t += "{\"type\":\"failure\",\"boundary_step\":8,\"lost_ranks\":[2],\"steps_recomputed\":0}\n"
           "{\"type\":\"usage\",\"rank\":0,\"first_step\":1,\"last_step\":8}\n";
    }
    if (step == 9) t += "{\"type\":\"recovery\",\"step\":9,\"processes\":2,\"steps_recomputed\":0}\n";
  }
  return t;
}

TEST(RunReport, ReadsCurvesAndEvents) {
  const RunCurves c = readRunCurves(metricsText(true), "m.jsonl");
  ASSERT_EQ(c.loss.size(), 12u);
  EXPECT_EQ(c.loss.front(), std::make_pair(1.0, 2.9));
  EXPECT_EQ(c.lr.back(), std::make_pair(12.0, 0.12));
  EXPECT_EQ(c.gradNorm.size(), 12u);
  EXPECT_EQ(c.throughput[2], std::make_pair(3.0, 103.0));
  ASSERT_EQ(c.evalLoss.size(), 1u);
  EXPECT_EQ(c.evalLoss[0], std::make_pair(6.0, 2.5)) << "an epoch's test loss sits at its last step";
  EXPECT_EQ(c.evalLabel, "test loss");
  ASSERT_EQ(c.events.size(), 4u);
  EXPECT_EQ(c.events[0].x, 4);
  EXPECT_EQ(c.events[0].label, "rescale 2,2 > 4");
  EXPECT_EQ(c.events[1].label, "re-plan 3,1");
  EXPECT_EQ(c.events[2].x, 8);
  EXPECT_EQ(c.events[2].label, "lost rank 2");
  EXPECT_EQ(c.events[3].x, 9);
  EXPECT_EQ(c.events[3].label, "recovered on 2");
  // Four panels (loss, lr, grad norm, throughput), each with every event.
  const auto panels = runPanels(c);
  ASSERT_EQ(panels.size(), 4u);
  EXPECT_EQ(panels[0].plot.series.size(), 2u) << "training and test loss";
  for (const Panel& p : panels) EXPECT_EQ(p.marks.size(), 4u);
}

TEST(RunReport, PeriodicValidationWinsOverEpochTestLoss) {
  std::string t = metricsText(false);
  t += "{\"type\":\"eval\",\"step\":12,\"val_loss\":1.75}\n";
  const RunCurves c = readRunCurves(t, "m.jsonl");
  ASSERT_FALSE(c.evalLoss.empty());
  EXPECT_EQ(c.evalLoss.back(), std::make_pair(12.0, 1.75));
  EXPECT_EQ(c.evalLabel, "validation loss");
  EXPECT_TRUE(c.gradNorm.size() == 12u);
}

TEST(RunReport, NoGradNormNoPanel) {
  const RunCurves c = readRunCurves("{\"type\":\"step\",\"step\":1,\"loss\":1,\"lr\":0.1,\"images_per_s\":5}\n"
                                    "{\"type\":\"step\",\"step\":2,\"loss\":0.5,\"lr\":0.1,\"images_per_s\":6}\n",
                                    "m.jsonl");
  EXPECT_EQ(runPanels(c).size(), 3u);
}

TEST(RunReport, BadInputNamesFileAndLine) {
  auto message = [](const std::string& text) {
    try {
      readRunCurves(text, "out/metrics.jsonl");
    } catch (const tl::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{\"type\":\"step\",\"step\":1,\"loss\":1}\n{oops\n").find("out/metrics.jsonl: line 2: not JSON"),
            std::string::npos);
  EXPECT_NE(message("[1,2]\n").find("out/metrics.jsonl: line 1: expected a JSON object with a \"type\""),
            std::string::npos);
  EXPECT_NE(message("{\"type\":\"step\",\"loss\":1}\n").find("line 1: a step record without \"step\""),
            std::string::npos);
  EXPECT_NE(message("{\"type\":\"epoch\",\"epoch\":0}\n").find("no step record"), std::string::npos);
}

TEST(RunReport, EventsAreDrawnAsLinesInTheirColours) {
  const std::string dir = tl::testing::freshDir("run_report_png");
  auto draw = [&](bool events) {
    const std::string path = dir + (events ? "/events.png" : "/plain.png");
    tl::writeFileAtomic(path, renderPanelsPng(runPanels(readRunCurves(metricsText(events), "m")), 900, 300));
    return tl::testing::decodePng(path);
  };
  const auto with = draw(true), without = draw(false);
  ASSERT_TRUE(with.ok) << with.error;
  ASSERT_TRUE(without.ok) << without.error;
  EXPECT_EQ(with.width, 900);
  EXPECT_EQ(with.height, 4 * 300);
  const tl::plot::Colour failure{200, 30, 30}, rescale{0, 110, 230}, recovery{0, 170, 90};
  for (const auto& c : {failure, rescale, recovery}) {
    EXPECT_GE(with.columnsWith(c.r, c.g, c.b, 40).size(), 1u) << int(c.r) << "," << int(c.g) << "," << int(c.b);
    EXPECT_EQ(without.count(c.r, c.g, c.b), 0u);
  }
  EXPECT_GT(with.count(40, 90, 200), 500u) << "the curves, in the first series colour";
}

TEST(RunReport, CommandDrawsARunAndRefusesAFolderWithoutMetrics) {
  const std::string dir = tl::testing::freshDir("run_report_cli");
  tl::writeFileAtomic(dir + "/metrics.jsonl", metricsText(true));
  const std::string scratch = tl::testing::freshDir("run_report_cli_scratch");
  auto ok = tl::testing::runCommand(std::string(TL_REPORT_BIN) + " run " + dir, 60, scratch);
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
  EXPECT_TRUE(tl::fileExists(dir + "/run.png"));
  EXPECT_TRUE(tl::testing::decodePng(dir + "/run.png").ok);
  const std::string empty = tl::testing::freshDir("run_report_cli_empty");
  auto bad = tl::testing::runCommand(std::string(TL_REPORT_BIN) + " run " + empty + " --out " + empty + "/x.png",
                                     60, scratch);
  EXPECT_NE(bad.exitCode, 0);
  EXPECT_NE(bad.err.find("has no metrics.jsonl"), std::string::npos) << bad.err;
  EXPECT_FALSE(tl::fileExists(empty + "/x.png")) << "nothing half-written";
}

}  // namespace
