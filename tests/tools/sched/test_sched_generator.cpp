// The generator: seeded, and within tolerance of the Philly statistics it is fitted to.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/check.h"
#include "tools/sched/sim/generator.h"
#include "tools/sched/sim/profiles.h"
#include "tools/sched/sim/simulator.h"

namespace tl::sched {
namespace {

double interArrivalCv(const std::vector<JobSpec>& jobs) {
  double sum = 0, sq = 0;
  const double n = double(jobs.size() - 1);
  for (size_t i = 1; i < jobs.size(); ++i) {
    const double gap = jobs[i].arrival - jobs[i - 1].arrival;
    sum += gap;
    sq += gap * gap;
  }
  const double mean = sum / n;
  return std::sqrt(sq / n - mean * mean) / mean;
}

GeneratorOptions many(int jobs) {
  GeneratorOptions o;
  o.jobs = jobs;
  o.spanSeconds = jobs * 60.0;
  o.referenceKind = "fast";
  o.seed = 7;
  return o;
}

TEST(SchedGenerator, SameSeedSameTraceOtherSeedOtherTrace) {
  const auto profiles = ProfileSet::builtin();
  auto o = many(200);
  const auto a = generateTrace(o, profiles), b = generateTrace(o, profiles);
  o.seed = 8;
  const auto c = generateTrace(o, profiles);
  ASSERT_EQ(a.size(), 200u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    EXPECT_EQ(a[i].work, b[i].work);
  }
  EXPECT_NE(a[5].arrival, c[5].arrival);
}

TEST(SchedGenerator, MatchesPhillyStatistics) {
  const auto profiles = ProfileSet::builtin();
  const auto jobs = generateTrace(many(400000), profiles);
  std::map<int, double> count, gpuTime;
  std::vector<double> lnOneGpu;
  double totalGpuTime = 0;
  for (const auto& j : jobs) {
    const double duration = j.work / profiles.rate(j.model, "fast", j.gangGpus());
    count[j.gangGpus()] += 1;
    gpuTime[j.gangGpus()] += duration * j.gangGpus();
    totalGpuTime += duration * j.gangGpus();
    if (j.gangGpus() == 1) lnOneGpu.push_back(std::log(duration));
  }
  EXPECT_NEAR(count[1] / jobs.size(), 0.93, 0.005);
  EXPECT_NEAR(gpuTime[8] / totalGpuTime, 0.48, 0.08);  // heavy-tailed: a loose tolerance
  double mean = 0, sq = 0;
  for (double v : lnOneGpu) mean += v;
  mean /= lnOneGpu.size();
  for (double v : lnOneGpu) sq += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 7.12, 0.02);
  EXPECT_NEAR(std::sqrt(sq / lnOneGpu.size()), 1.98, 0.02);
  EXPECT_NEAR(quantile(lnOneGpu, 0.5), 7.12, 0.03);  // median ~20 min
  EXPECT_NEAR(interArrivalCv(jobs), 1, 0.02);        // Poisson
  EXPECT_NEAR(jobs.back().arrival / (400000 * 60.0), 1, 0.01);
}

TEST(SchedGenerator, BurstyArrivalsReachTheAskedCoefficientOfVariation) {
  auto o = many(400000);
  o.interArrivalCv = 15;
  const auto jobs = generateTrace(o, ProfileSet::builtin());
  EXPECT_NEAR(interArrivalCv(jobs), 15, 2);
  EXPECT_NEAR(jobs.back().arrival / (400000 * 60.0), 1, 0.15);  // the mean rate holds
}

TEST(SchedGenerator, PresetsHaveTheirSizes) {
  const auto profiles = ProfileSet::builtin();
  const std::map<std::string, std::pair<int, int>> sizes{
      {"pollux", {160, 64}}, {"easyscale", {70, 64}}, {"large", {10000, 1000}}};
  for (const auto& [name, size] : sizes) {
    const Preset p = preset(name);
    EXPECT_EQ(p.cluster.totalGpus(), size.second) << name;
    const auto jobs = generateTrace(p.generator, profiles);
    EXPECT_EQ(int(jobs.size()), size.first) << name;
    for (const auto& j : jobs) {
      ASSERT_LE(j.gangGpus(), 8);
      ASSERT_EQ(j.maxGpus, std::min(16, 4 * j.gangGpus()));  // elastic jobs may grow 4x
      ASSERT_EQ(j.minGpus, 1);
    }
  }
  EXPECT_EQ(preset("easyscale").cluster.kinds.size(), 3u);
  EXPECT_THROW(preset("philly"), InputError);
}

// --load's window (loadWindowSeconds), worked out by hand. A job's mean GPU-seconds at a
// preset's load of 1 is capacity x span / jobs (capacity in fast GPUs by resnet20's 1-GPU rates:
// fast 1000, mid 500, slow 250 samples/s); the mean request is 0.93 + 0.03 x 2 + 0.02 x 4 +
// 0.02 x 8 = 1.23 GPUs; on the slowest kind a job holds its GPUs 4x as long as on fast.
//  easyscale: 32 + 16/2 + 16/4 = 44 fast GPUs; 44 x 4800 / 70 / 1.23 = 2452.96 s on fast,
//    9811.85 s on slow; the window is 3 of those, 29435.5 s (the span is 4800 s).
//  pollux: 64 fast GPUs, one kind; 64 x 28800 / 160 / 1.23 = 9365.85 s; 3 x that = 28097.6 s
//    is under the 28800 s span: the span.
//  large: 500 + 250/2 + 250/4 = 687.5; 687.5 x 259200 / 10000 / 1.23 x 4 = 57951.2 s; 3 x
//    that = 173853.7 s is under the 259200 s span: the span.
TEST(SchedGenerator, LoadWindowSpansThreeHoldsOnTheSlowestKind) {
  const auto profiles = ProfileSet::builtin();
  EXPECT_NEAR(loadWindowSeconds(preset("easyscale").generator, profiles), 29435.5, 0.1);
  EXPECT_DOUBLE_EQ(loadWindowSeconds(preset("pollux").generator, profiles), 28800);
  EXPECT_DOUBLE_EQ(loadWindowSeconds(preset("large").generator, profiles), 259200);
  // Fewer jobs in the same span: each holds longer, and pollux's window grows past its span.
  auto fewer = preset("pollux").generator;
  fewer.jobs = 100;
  EXPECT_NEAR(loadWindowSeconds(fewer, profiles), 3 * 64 * 28800 / 100 / 1.23, 0.01);
}

// With --load the trace's window is loadWindowSeconds: easyscale's arrivals run past its span
// to the window's end, and the work they offer inside it is L x capacity x window.
TEST(SchedGenerator, LoadFillsTheWindowWithTheAskedWork) {
  const auto profiles = ProfileSet::builtin();
  auto o = preset("easyscale").generator;
  o.arrivalLoad = 1.3;
  o.seed = 2;
  const double window = loadWindowSeconds(o, profiles);
  const auto jobs = generateTrace(o, profiles);
  EXPECT_GT(jobs.back().arrival, 0.95 * window);
  EXPECT_LT(jobs.back().arrival, window);
  EXPECT_NEAR(offeredWindowLoad(jobs, window, o, profiles), 1.3, 1e-6);
  for (const auto& j : jobs)  // the cap (twice the span) holds
    ASSERT_LE(j.work / profiles.rate(j.model, "fast", j.requestGpus), 2 * 4800 * (1 + 1e-12));
}

}  // namespace
}  // namespace tl::sched
