// A metrics log continued by a survivor that took over from a lost lead
// (train::MetricsLog::continuing): the lead's half-written last line is cut off, and records of
// steps, evals and epochs the file already holds are not written twice.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/check.h"
#include "runtime/train/metrics.h"

namespace tl::train {
namespace {

std::string scratchFile(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tl_test_metrics_log_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

nlohmann::json step(int64_t s) { return {{"type", "step"}, {"step", s}, {"loss", 0.5 * double(s)}}; }

TEST(MetricsLogContinuing, CutsAHalfWrittenLineAndLogsNothingTwice) {
  const std::string path = scratchFile("metrics.jsonl");
  {
    std::ofstream out(path, std::ios::trunc);
    out << step(1).dump() << '\n' << step(2).dump() << '\n';
    out << nlohmann::json{{"type", "eval"}, {"step", 2}, {"val_loss", 1.0}}.dump() << '\n';
    out << nlohmann::json{{"type", "epoch"}, {"epoch", 0}}.dump() << '\n';
    out << step(3).dump() << '\n';
    out << R"({"type":"step","step":4,"lo)";  // the lost lead died while writing step 4
  }
  MetricsLog log = MetricsLog::continuing(path);
  EXPECT_EQ(log.lastStepLogged(), 3);
  ASSERT_EQ(lines(path).size(), 5u) << "the half-written line is cut off";
  log.write(step(3));  // recomputed by survivors that were behind the lost lead
  log.write(nlohmann::json{{"type", "eval"}, {"step", 2}, {"val_loss", 1.0}});
  log.write(nlohmann::json{{"type", "epoch"}, {"epoch", 0}});
  log.write(nlohmann::json{{"type", "failure"}, {"mode", "in-place"}});  // not keyed: always written
  log.write(step(4));
  log.write(nlohmann::json{{"type", "epoch"}, {"epoch", 1}});
  EXPECT_EQ(log.lastStepLogged(), 4);
  const std::vector<std::string> got = lines(path);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(nlohmann::json::parse(got[5])["type"], "failure");
  EXPECT_EQ(nlohmann::json::parse(got[6]), step(4));
  EXPECT_EQ(nlohmann::json::parse(got[7])["epoch"], 1);
  for (const std::string& l : got) EXPECT_TRUE(nlohmann::json::accept(l)) << l;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(MetricsLogContinuing, StartsAFileThatDoesNotExistAndNamesOneItCannotWrite) {
  const std::string path = scratchFile("new.jsonl");
  std::filesystem::remove(path);
  MetricsLog log = MetricsLog::continuing(path);
  EXPECT_EQ(log.lastStepLogged(), -1);
  log.write(step(1));
  EXPECT_EQ(lines(path).size(), 1u);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  try {
    MetricsLog::continuing("/proc/no-such-folder/metrics.jsonl");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no-such-folder/metrics.jsonl"), std::string::npos) << e.what();
  }
}

TEST(MetricsLog, EveryProcessKeepsItsLastStepRecord) {
  MetricsLog disabled;  // a rank other than the lead
  EXPECT_EQ(disabled.lastStepRecord(), "");
  disabled.noteStep(step(7));
  disabled.write(step(7));  // a no-op log
  EXPECT_EQ(nlohmann::json::parse(disabled.lastStepRecord()), step(7));
  EXPECT_EQ(disabled.lastStepLogged(), -1);
}

}  // namespace
}  // namespace tl::train
