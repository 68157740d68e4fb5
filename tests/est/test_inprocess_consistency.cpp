// The consistency contract inside one test process: N = 4 ESTs of a small CNN (BatchNorm and
// dropout) on synthetic CIFAR data, P ranks as threads over the in-memory communicator (baton
// mode: one rank runs at a time, each with its own CPU generator, as separate processes would).
//  - exact reduction: DDP mode, every placement, and layout changes between steps
//    (EstExecutor::changeLayout) give the same parameters, bit for bit;
//  - fp32 reduction: deterministic for a fixed placement, but without that guarantee.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dataload/synthetic.h"
#include "runtime/train/step.h"
#include "tests/est/layout_runs.h"
#include "tests/support/in_memory_ranks.h"
#include "tests/support/run_command.h"

namespace tl::est {
namespace {

using testing::Change;
using testing::kLayoutTestSteps;
constexpr int kEsts = 4;

const std::string& dataDir() {
  static const std::string dir = testing::syntheticCifar("inprocess_consistency_data", 96, 3);
  return dir;
}

struct Outcome {
  std::string sha;  // of the members still in the job at the end (they must agree)
  std::vector<int64_t> steps;
  std::vector<bool> inJob;
};

Outcome train(const std::string& reduction, const std::vector<int>& counts, const std::vector<Change>& changes = {}) {
  const JobConfig job = testing::layoutTestJob(dataDir(), reduction);
  std::vector<testing::RankOutcome> ranks(counts.size());
  tl::testing::runInMemoryRanks(int(counts.size()), [&](comm::Communicator& world) {
    ranks[size_t(world.rank())] = testing::trainOnRank(world, job, counts, changes);
  });
  Outcome out;
  for (const auto& r : ranks) {
    out.steps.push_back(r.steps);
    out.inJob.push_back(r.inJob);
    if (!r.inJob) continue;
    if (out.sha.empty()) out.sha = r.sha;
    EXPECT_EQ(r.sha, out.sha) << "members of one job disagree";
  }
  return out;
}

const std::string& ddpExact() {
  static const std::string sha = train("exact", {1, 1, 1, 1}).sha;
  return sha;
}

TEST(InProcessConsistency, ExactPlacementsMatchDdpMode) {
  ASSERT_EQ(ddpExact().size(), 64u);
  for (const auto& counts : std::vector<std::vector<int>>{{4}, {2, 2}, {3, 1}, {2, 1, 1}}) {
    EXPECT_EQ(train("exact", counts).sha, ddpExact()) << "placement on " << counts.size() << " processes";
  }
}

TEST(InProcessConsistency, IdleMembersChangeNothing) {
  EXPECT_EQ(train("exact", {2, 0, 2, 0}).sha, ddpExact());
}

TEST(InProcessConsistency, LayoutChainMatchesUninterruptedRun) {
  // 4 -> 2 -> 3 (1,2,1) -> 1 -> 4 processes over one 4-member world.
  const Outcome o = train("exact", {1, 1, 1, 1},
                          {{1, {2, 2, 0, 0}}, {2, {1, 2, 1, 0}}, {3, {4, 0, 0, 0}}, {4, {1, 1, 1, 1}}});
  EXPECT_EQ(o.sha, ddpExact());
  EXPECT_EQ(o.steps, std::vector<int64_t>(4, kLayoutTestSteps));
}

TEST(InProcessConsistency, PlacementChangeMatchesUninterruptedRun) {
  EXPECT_EQ(train("exact", {3, 1}, {{2, {2, 2}}}).sha, ddpExact());
  // Over a fresh communicator: the reducer moves to it with its state.
  EXPECT_EQ(train("exact", {3, 1}, {{3, {1, 3}, Change::FreshSplit}}).sha, ddpExact());
}

TEST(InProcessConsistency, GrowOntoIdleMembersMatchesUninterruptedRun) {
  EXPECT_EQ(train("exact", {2, 2, 0, 0}, {{2, {1, 1, 1, 1}, Change::FreshSplit}}).sha, ddpExact());
}

TEST(InProcessConsistency, ShrinkLetsMembersLeave) {
  const Outcome o = train("exact", {1, 1, 1, 1}, {{2, {2, 2, 0, 0}, Change::FreshSplit}});
  EXPECT_EQ(o.sha, ddpExact());
  EXPECT_EQ(o.inJob, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(o.steps, (std::vector<int64_t>{kLayoutTestSteps, kLayoutTestSteps, 2, 2}));
}

TEST(InProcessConsistency, Fp32IsDeterministicButNotExact) {
  const std::string ddp = train("fp32", {1, 1, 1, 1}).sha;
  EXPECT_EQ(train("fp32", {1, 1, 1, 1}).sha, ddp) << "same placement, same bits";
  const std::string twoByTwo = train("fp32", {2, 2}).sha;
  EXPECT_EQ(train("fp32", {2, 2}).sha, twoByTwo) << "same placement, same bits";
  // fp32 rounds every partial sum to float, the exact mode only the mean: other bits.
  EXPECT_NE(ddp, ddpExact());
  // In-memory reductions add in rank order, ((g0 + g1) + g2) + g3; placement 2,2 adds
  // (g0 + g1) + (g2 + g3): another rounding, other bits.
  EXPECT_NE(twoByTwo, ddp);
}

// One process has no collective to overlap: with --overlap on it reduces after backward (no
// hand-over to a helper thread, as on a GPU; no overlap figures in the step records), with the
// bits of --overlap off and of DDP mode.
TEST(InProcessConsistency, OneProcessReducesAfterBackwardWithOverlapOn) {
  for (const bool overlap : {true, false}) {
    JobConfig job = testing::layoutTestJob(dataDir(), "exact");
    job.overlap = overlap;
    job.bucketBytes = 16 << 10;  // several buckets: each would have started during backward
    const std::string metricsPath =
        tl::testing::freshDir("inprocess_one_process_overlap") + "/metrics.jsonl";
    tl::testing::runInMemoryRanks(1, [&](comm::Communicator& world) {
      auto executor = ExecutorBuilder(job)
                          .layout(Placement::even(kEsts, 1), world, world)
                          .backwardOnHelperThread(true)
                          .build();
      train::MetricsLog metrics(metricsPath);
      const train::TrainResult r = executor->run(metrics);
      EXPECT_EQ(r.paramsSha256, ddpExact()) << "overlap " << overlap;
    });
    std::ifstream in(metricsPath);
    int steps = 0;
    for (std::string line; std::getline(in, line);) {
      const auto record = nlohmann::json::parse(line);
      if (record.at("type") != "step") continue;
      ++steps;
      EXPECT_FALSE(record.contains("overlap_buckets")) << record.dump();
    }
    EXPECT_EQ(steps, kLayoutTestSteps);
  }
}

TEST(InProcessConsistency, SimulatedDeviceWaitsAndTrainsNothing) {
  JobConfig job = testing::layoutTestJob(dataDir(), "exact");
  job.device = DeviceSpec::parse("sim:400");  // 3 steps x 4 ESTs x 8 images: 0.24 s of waiting
  job.steps = 3;
  tl::testing::runInMemoryRanks(1, [&](comm::Communicator& world) {
    auto executor = ExecutorBuilder(job).layout(Placement::even(kEsts, 1), world, world).build();
    const std::string initial = train::paramsSha256(executor->model());
    train::MetricsLog metrics;
    const train::TrainResult r = executor->run(metrics);
    EXPECT_TRUE(r.simulatedDevice);
    EXPECT_EQ(r.steps, 3);
    EXPECT_EQ(r.replays, 0);
    EXPECT_EQ(r.paramsSha256, initial) << "the stand-in device must not train";
    EXPECT_GE(r.computeSeconds, 3 * kEsts * 8 / 400.0 * 0.95);
    EXPECT_EQ(r.loaderImages, 3 * kEsts * 8);
  });
}

}  // namespace
}  // namespace tl::est
