// CPU x memory scheduling: the generated mix, exact JCTs of hand-made cases, capacity never
// exceeded, and resource-aware allocation against GPU-proportional on a mixed load.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "common/check.h"
#include "tools/sched/resources/resource_sim.h"
#include "tests/support/run_command.h"

namespace tl::sched {
namespace {

ResourceJob memoryHungry(const std::string& id, double arrival, double work) {
  ResourceJob j;
  j.id = id;
  j.kind = "memory-hungry";
  j.arrival = arrival;
  j.gpus = 1;
  j.work = work;
  j.loader = {0, 0.001, 800};
  j.cache = {140e9, 110e3, 136e-9, 0};
  j.maxCpus = 16;
  return j;
}

TEST(ResourceSim, ALoneJobRunsAtItsShareOfTheServer) {
  const ResourceJob job = memoryHungry("m", 10, 1e6);
  ResourceSimOptions options;
  options.servers.assign(1, ResourceServer{});
  options.policy = "gpu-proportional";
  // 1 of 8 GPUs: 3 cores and 50 GB; miss share 1 - 50/140, each miss 14.96 ms.
  const double miss = 1 - 50e9 / 140e9;
  const double proportional = std::min(800.0, 3 / (0.001 + miss * 110e3 * 136e-9));
  auto r = simulateResources({job}, options);
  EXPECT_NEAR(r.jobs[0].jct(), 1e6 / proportional, 1e-6 * r.jobs[0].jct());
  EXPECT_EQ(r.jobs[0].start, 10);
  // Resource-aware: alone on the server it may take every core and the whole data set.
  options.policy = "resource-aware";
  r = simulateResources({job}, options);
  EXPECT_NEAR(r.jobs[0].jct(), 1e6 / 800, 1e-6 * r.jobs[0].jct());
}

TEST(ResourceSim, GpusAreNeverOversubscribedAndEveryJobFinishes) {
  ResourceMixOptions mix;
  mix.jobs = 30;
  mix.spanSeconds = 1800;
  mix.meanHours = 0.5;
  const auto jobs = generateResourceMix(mix);
  for (const std::string& policy : resourcePolicyNames()) {
    ResourceSimOptions options;
    options.servers.assign(2, ResourceServer{});
    options.policy = policy;
    const auto r = simulateResources(jobs, options);
    std::map<int, std::vector<std::pair<double, int>>> events;  // server -> (time, +/- gpus)
    for (size_t j = 0; j < jobs.size(); ++j) {
      ASSERT_GE(r.jobs[j].start, jobs[j].arrival) << policy;
      ASSERT_GT(r.jobs[j].finish, r.jobs[j].start) << policy;
      ASSERT_GE(r.jobs[j].server, 0);
      events[r.jobs[j].server].push_back({r.jobs[j].start, jobs[j].gpus});
      events[r.jobs[j].server].push_back({r.jobs[j].finish, -jobs[j].gpus});
    }
    for (auto& [server, list] : events) {
      std::sort(list.begin(), list.end());  // at equal times the release (-) comes first
      int used = 0;
      for (auto& [t, d] : list) {
        used += d;
        ASSERT_LE(used, 8) << policy << " server " << server << " at " << t;
      }
    }
  }
}

TEST(ResourceSim, SensitivityAwareSplitBeatsGpuProportionalOnAMixedLoad) {
  ResourceMixOptions mix;
  mix.jobs = 40;
  mix.spanSeconds = 2 * 3600;
  mix.meanHours = 1;
  mix.seed = 7;
  const auto jobs = generateResourceMix(mix);
  std::map<std::string, int> kinds;
  for (const auto& j : jobs) ++kinds[j.kind];
  EXPECT_EQ(kinds.size(), 3u) << "the mix has every kind";
  ResourceSimOptions options;
  options.servers.assign(2, ResourceServer{});
  options.policy = "gpu-proportional";
  const auto proportional = simulateResources(jobs, options);
  options.policy = "resource-aware";
  const auto aware = simulateResources(jobs, options);
  EXPECT_LT(aware.meanJct, 0.9 * proportional.meanJct);
  EXPECT_LT(aware.makespan, proportional.makespan);
}

TEST(ResourceSim, BadInputIsRefused) {
  ResourceSimOptions options;
  options.policy = "fifo";
  EXPECT_THROW(simulateResources({memoryHungry("m", 0, 1)}, options), InputError);
  options.policy = "resource-aware";
  ResourceJob big = memoryHungry("big", 0, 1);
  big.gpus = 16;
  EXPECT_THROW(simulateResources({big}, options), InputError);
  ResourceMixOptions mix;
  mix.jobs = 0;
  EXPECT_THROW(generateResourceMix(mix), InputError);
}

TEST(ResourceSimTool, PrintsBothPoliciesAndRefusesBadFlags) {
  const std::string out = tl::testing::freshDir("resource_tool");
  auto r = tl::testing::runCommand(std::string(TL_SIM_BIN) +
                                       " resources --jobs 12 --servers 1 --seed 3 --out " + out,
                                   60, out);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("gpu-proportional"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("resource-aware"), std::string::npos) << r.out;
  EXPECT_NE(tl::testing::slurp(out + "/resources.csv").find("policy,mean_jct_s,makespan_s"),
            std::string::npos);
  r = tl::testing::runCommand(std::string(TL_SIM_BIN) + " resources --cpus 4", 60, out);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--cpus (4) must be at least --gpus (8)"), std::string::npos) << r.err;
  r = tl::testing::runCommand(std::string(TL_SIM_BIN) + " resources --mix 1,x,1", 60, out);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--mix: expected three shares"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tl::sched
