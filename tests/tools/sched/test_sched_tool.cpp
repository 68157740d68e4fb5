// tl-sim as a process: its outputs and its exit statuses.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/files.h"
#include "tests/support/png_check.h"
#include "tools/sched/sim/profiles.h"

namespace {

struct Outcome {
  int status;
  std::string output;
};

Outcome runSim(const std::string& args) {
  const std::string command = std::string(TL_SIM_BIN) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string tmpDir(const std::string& name) {
  const char* base = std::getenv("TL_TEST_TMP");
  const std::string dir = std::string(base ? base : "/tmp") + "/sched_tool_" + name;
  std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
  return dir;
}

// A CSV with a header row: each row's fields by column name.
struct CsvRow {
  std::shared_ptr<const std::map<std::string, size_t>> column;
  std::vector<std::string> field;
  std::string line;
  const std::string& operator[](const std::string& name) const { return field[column->at(name)]; }
};
std::vector<CsvRow> readCsv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  auto column = std::make_shared<std::map<std::string, size_t>>();
  {
    std::istringstream header(line);
    size_t i = 0;
    for (std::string name; std::getline(header, name, ',');) (*column)[name] = i++;
  }
  std::vector<CsvRow> rows;
  while (std::getline(in, line)) {
    CsvRow r{column, {}, line};
    std::istringstream row(line);
    for (std::string v; std::getline(row, v, ',');) r.field.push_back(v);
    rows.push_back(std::move(r));
  }
  return rows;
}

TEST(SchedTool, PresetRunWritesCsvsAndPlotsWithEveryPolicy) {
  const std::string out = tmpDir("preset");
  const auto r = runSim("--preset easyscale --rescale-cost 5 --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("elastic-hetero"), std::string::npos) << r.output;
  for (const char* f : {"summary.csv", "trace.csv", "jobs_yarn-cs.csv", "jobs_las.csv",
                        "jobs_elastic.csv", "jobs_elastic-hetero.csv", "jobs_goodput.csv",
                        "jobs_hetero-goodput.csv"})
    EXPECT_TRUE(tl::fileExists(out + "/" + f)) << f;
  const std::string summary = tl::readFile(out + "/summary.csv");
  EXPECT_EQ(std::count(summary.begin(), summary.end(), '\n'), 7) << summary;  // 6 policies
  const std::string jobs = tl::readFile(out + "/jobs_las.csv");
  EXPECT_EQ(std::count(jobs.begin(), jobs.end(), '\n'), 71);
  // Every policy's colour is drawn in the CDF.
  const auto png = tl::testing::decodePng(out + "/jct_cdf.png");
  ASSERT_TRUE(png.ok) << png.error;
  EXPECT_GT(png.count(214, 80, 30), 100u);   // yarn-cs
  EXPECT_GT(png.count(120, 60, 170), 100u);  // las
  EXPECT_GT(png.count(40, 150, 60), 100u);   // elastic-hetero
  for (const char* f : {"allocation.png", "mean_jct.png"}) {
    const auto p = tl::testing::decodePng(out + "/" + f);
    ASSERT_TRUE(p.ok) << f << ": " << p.error;
    EXPECT_GT(p.inkShare(), 0.02) << f;
  }
}

// Offered load of a written trace inside the window [0, window), worked out here from the CSV
// and the profiles alone: each job's request x min(duration, window - arrival), the duration
// being work / rate of the request on the fastest kind, over capacity in fastest-kind GPUs x
// the window.
struct TraceLoad {
  double load = 0, lastArrival = 0;
  int jobs = 0;
};
TraceLoad loadOf(const std::string& csv, const std::map<std::string, int>& kinds, double window) {
  const auto profiles = tl::sched::ProfileSet::builtin();
  TraceLoad t;
  double gpuSeconds = 0;
  for (const auto& f : readCsv(csv)) {
    const int gpus = std::stoi(f["request_gpus"]);
    const double work = std::stod(f["work_samples"]);
    const double arrival = std::stod(f["arrival_s"]);
    const double duration = work / profiles.rate(f["model"], "fast", gpus);
    gpuSeconds += gpus * std::min(duration, std::max(0.0, window - arrival));
    ++t.jobs;
    t.lastArrival = std::max(t.lastArrival, arrival);
  }
  double capacity = 0;
  for (const auto& [kind, count] : kinds)
    capacity += count * profiles.rate("resnet20", kind, 1) / profiles.rate("resnet20", "fast", 1);
  t.load = gpuSeconds / (capacity * window);
  return t;
}

double queueingShareOf(const std::string& summaryCsv, const std::string& policy) {
  for (const auto& f : readCsv(summaryCsv))
    if (f["policy"] == policy) return std::stod(f["queueing_share"]);
  return -1;
}

// --load L (issue 42): the work the arrivals offer inside the window at their request is L x
// capacity x window, work past the window not counted, so more load means more arrivals in the
// same window and, above 1, a queue under the non-elastic capacity scheduler. easyscale's
// window is three holds of a job on its slow kind, 29,436 s (test_sched_generator works it out).
TEST(SchedTool, LoadIsTheWorkOfferedInsideTheArrivalWindow) {
  const std::map<std::string, int> easyscale{{"fast", 32}, {"mid", 16}, {"slow", 16}};
  const double window = 29436;
  std::map<double, TraceLoad> seen;
  std::map<double, double> yarnShare;
  for (double load : {0.5, 1.0, 1.3, 2.0}) {
    const std::string out = tmpDir("load" + std::to_string(int(load * 10)));
    const auto r = runSim("--preset easyscale --seed 3 --load " + std::to_string(load) +
                          " --policies yarn-cs,elastic-hetero --out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("offered load inside the arrival window (0 to 29436 s)"),
              std::string::npos)
        << r.output;
    seen[load] = loadOf(tl::readFile(out + "/trace.csv"), easyscale, window);
    EXPECT_NEAR(seen[load].load / load, 1, 0.01) << "asked " << load << ", got " << seen[load].load;
    EXPECT_LT(seen[load].lastArrival, window) << load;
    const std::string summary = tl::readFile(out + "/summary.csv");
    EXPECT_NE(summary.find("queueing_share,arrival_window_utilisation"), std::string::npos)
        << summary;
    yarnShare[load] = queueingShareOf(summary, "yarn-cs");
  }
  // The window stays; the arrivals grow with the load.
  EXPECT_LT(seen[0.5].jobs, seen[1.0].jobs);
  EXPECT_LT(seen[1.0].jobs, seen[2.0].jobs);
  EXPECT_GT(seen[0.5].lastArrival, 0.8 * window);
  // Contention: from 1.3 yarn-cs queues for a third of JCT and more, at 0.5 hardly.
  EXPECT_LT(yarnShare[0.5], 0.05) << yarnShare[0.5];
  EXPECT_GT(yarnShare[1.3], 1.0 / 3) << yarnShare[1.3];
  EXPECT_GT(yarnShare[2.0], yarnShare[1.3]);
  // --load needs a preset: a replayed trace keeps its arrivals.
  const std::string dir = tmpDir("load_trace");
  tl::writeFileAtomic(dir + "/t.csv",
                      "id,arrival_s,model,work_samples,min_gpus,max_gpus\na,0,cnn,1,1,1\n");
  const auto bad =
      runSim("--trace " + dir + "/t.csv --cluster fast:1 --load 2 --out " + dir + "/o");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--load: only with --preset"), std::string::npos) << bad.output;
  const auto badGrow =
      runSim("--trace " + dir + "/t.csv --cluster fast:1 --grow 2 --out " + dir + "/o");
  EXPECT_EQ(badGrow.status, 2);
  EXPECT_NE(badGrow.output.find("--grow: only with --preset"), std::string::npos)
      << badGrow.output;
}

// --grow 1: max = request, the sweep's second setting; the preset default lets jobs grow 4x.
TEST(SchedTool, GrowSetsMaxGpusAsAMultipleOfTheRequest) {
  for (int grow : {1, 4}) {
    const std::string out = tmpDir("grow" + std::to_string(grow));
    const auto r = runSim("--preset easyscale --seed 2 --load 1 --grow " + std::to_string(grow) +
                          " --policies yarn-cs --out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    int rows = 0, grown = 0;
    for (const auto& f : readCsv(tl::readFile(out + "/trace.csv"))) {
      const int request = std::stoi(f["request_gpus"]);
      const int max = std::stoi(f["max_gpus"]);
      EXPECT_EQ(max, std::min(16, request * grow)) << f.line;
      ++rows;
      grown += max > request;
    }
    EXPECT_GT(rows, 100);
    if (grow == 4) {
      EXPECT_GT(grown, 0);
    }
  }
}

TEST(SchedTool, ReplaysATraceAndRejectsBadRowsWithTheirLines) {
  const std::string dir = tmpDir("trace");
  tl::writeFileAtomic(dir + "/good.csv",
                      "id,arrival_s,model,work_samples,min_gpus,max_gpus\n"
                      "a,0,cnn,25000,1,1\nb,1,cnn,12500,1,1\n");
  auto ok = runSim("--trace " + dir + "/good.csv --cluster fast:1 --policies yarn-cs --out " + dir + "/o");
  ASSERT_EQ(ok.status, 0) << ok.output;
  // cnn does 2500 samples/s on one fast GPU: a takes 10 s, b 5 s after it.
  EXPECT_NE(tl::readFile(dir + "/o/jobs_yarn-cs.csv").find("b,1.000,10.000,15.000,14.000"),
            std::string::npos);

  tl::writeFileAtomic(dir + "/bad.csv",
                      "id,arrival_s,model,work_samples,min_gpus,max_gpus\n"
                      "a,0,cnn,25000,1,1\nb,x,cnn,12500,1,1\n");
  auto bad = runSim("--trace " + dir + "/bad.csv --cluster fast:1 --out " + dir + "/bad");
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("bad.csv:3: arrival_s: expected a number, got 'x'"), std::string::npos)
      << bad.output;
  EXPECT_FALSE(tl::fileExists(dir + "/bad/summary.csv"));  // nothing half-written

  auto unknown = runSim("--trace " + dir + "/good.csv --cluster fast:1 --policies fifo --out " + dir + "/u");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.output.find("unknown policy 'fifo'"), std::string::npos) << unknown.output;
  // --in-place-only: the policies tl-sched can run, by default; the others are refused.
  auto inPlace = runSim("--trace " + dir + "/good.csv --cluster fast:1,slow:1 --in-place-only --out " + dir + "/ip");
  ASSERT_EQ(inPlace.status, 0) << inPlace.output;
  for (const char* p : {"yarn-cs", "elastic", "hetero-goodput"})
    EXPECT_TRUE(tl::fileExists(dir + "/ip/jobs_" + std::string(p) + ".csv")) << p;
  EXPECT_FALSE(tl::fileExists(dir + "/ip/jobs_las.csv"));
  auto refused = runSim("--trace " + dir + "/good.csv --cluster fast:1 --in-place-only --policies goodput --out " +
                        dir + "/r");
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.output.find("policy goodput moves jobs between kinds"), std::string::npos) << refused.output;
  auto noProfile = runSim("--trace " + dir + "/good.csv --cluster tpu:4 --out " + dir + "/n");
  EXPECT_EQ(noProfile.status, 2);
  EXPECT_NE(noProfile.output.find("no profile for model cnn on GPU kind tpu"), std::string::npos)
      << noProfile.output;
}

}  // namespace
