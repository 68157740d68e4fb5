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

}  // namespace
}  // namespace tl::sched
