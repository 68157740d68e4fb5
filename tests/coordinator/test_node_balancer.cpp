// The coordinator's policy without sockets: exploration, allocation toward the job that gains
// more, hysteresis against noise, and re-decisions when jobs come and go.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "common/check.h"
#include "coordinator/node_balancer.h"
#include "tests/coordinator/coordinator_test_util.h"

namespace tl::coordinator {
namespace {

using test_util::syntheticWindow;

BalancerOptions fixedBudget(int cores) {
  BalancerOptions options;
  options.loaderCores = cores;
  return options;
}

// Jobs that follow known models and apply every assignment at once.
struct Node {
  NodeBalancer balancer;
  std::map<std::string, ThroughputModel> truth;
  std::map<std::string, int> workers;
  std::mt19937 rng{11};
  double noise = 0;

  explicit Node(const BalancerOptions& options) : balancer(options) {}
  void apply(const Decision& decision) {
    for (auto& [id, w] : decision.changes) workers[id] = w;
  }
  void add(const std::string& id, ThroughputModel model, int min = 1, int max = 8) {
    truth[id] = model;
    apply(balancer.addJob(id, {0, 1, min, max, 1}));
  }
  // One window from every job, in id order. Returns how many sizes changed.
  int round() {
    int moves = 0;
    for (auto& [id, model] : truth) {
      Decision d = balancer.report(id, syntheticWindow(model, workers[id], 1.0, &rng, noise));
      moves += int(d.changes.size());
      apply(d);
    }
    return moves;
  }
  int total() const {
    int sum = 0;
    for (auto& [id, w] : workers) sum += w;
    return sum;
  }
};

TEST(NodeBalancer, ExploresTwoSizesThenAllocates) {
  Node node(fixedBudget(4));
  node.add("a", {0, 0.01, 1000});
  EXPECT_EQ(node.workers["a"], 4);  // the fair share of a lone job
  EXPECT_TRUE(node.balancer.jobs()[0].exploring);
  node.round();
  EXPECT_EQ(node.workers["a"], 4);  // one window is not enough
  node.round();
  EXPECT_EQ(node.workers["a"], 3);  // second size: one below, so never above the budget
  node.round();
  node.round();
  EXPECT_FALSE(node.balancer.jobs()[0].exploring);
  EXPECT_EQ(node.workers["a"], 4);
  EXPECT_NEAR(node.balancer.jobs()[0].model.b, 0.01, 1e-9);
}

TEST(NodeBalancer, ExploresUpwardFromTheMinimum) {
  Node node(fixedBudget(2));
  node.add("a", {0, 0.01, 1000});
  node.add("b", {0, 0.01, 1000});
  EXPECT_EQ(node.workers["a"], 1);
  EXPECT_EQ(node.workers["b"], 1);
  node.round();
  node.round();
  EXPECT_EQ(node.workers["a"], 2);
  EXPECT_EQ(node.workers["b"], 2);
}

TEST(NodeBalancer, ExplorersPairUpToKeepUsingTheBudget) {
  Node node(fixedBudget(6));
  for (const char* id : {"a", "b", "c"}) node.add(id, {0, 0.01, 1000});
  node.round();
  node.round();
  // a steps down and frees a core, b steps up into it, c steps down.
  EXPECT_EQ(node.workers["a"], 1);
  EXPECT_EQ(node.workers["b"], 3);
  EXPECT_EQ(node.workers["c"], 1);
}

TEST(NodeBalancer, WindowsBeforeAnAssignmentWasAppliedCount) {
  NodeBalancer balancer(fixedBudget(4));
  ThroughputModel truth{0, 0.01, 1000};
  EXPECT_EQ(balancer.addJob("a", {0, 1, 1, 8, 1}).changes.at("a"), 4);
  // The job still runs 1 worker for two windows: that is a measured size already.
  EXPECT_TRUE(balancer.report("a", syntheticWindow(truth, 1, 1.0)).changes.empty());
  EXPECT_TRUE(balancer.report("a", syntheticWindow(truth, 1, 1.0)).changes.empty());
  balancer.report("a", syntheticWindow(truth, 4, 1.0));
  balancer.report("a", syntheticWindow(truth, 4, 1.0));
  EXPECT_FALSE(balancer.jobs()[0].exploring);
}

TEST(NodeBalancer, CoresMoveToTheJobThatGainsMore) {
  Node node(fixedBudget(6));
  node.add("cheap", {0.0005, 0.004, 2000});  // keeps gaining up to ~5 workers
  node.add("bound", {0, 0.004, 200});        // its device saturates at one worker
  node.add("mid", {0.001, 0.01, 220});       // two workers reach its device
  for (int r = 0; r < 12; ++r) node.round();
  EXPECT_EQ(node.total(), 6);
  std::vector<JobDemand> demands;
  for (auto& [id, model] : node.truth) demands.push_back({model, 1, 8});
  std::vector<int> best = bestStaticSplit(demands, 6);  // id order: bound, cheap, mid
  EXPECT_EQ(node.workers["bound"], best[0]);
  EXPECT_EQ(node.workers["cheap"], best[1]);
  EXPECT_EQ(node.workers["mid"], best[2]);
  EXPECT_EQ(node.round(), 0);  // settled
}

TEST(NodeBalancer, HysteresisIgnoresNoiseButFollowsRealChange) {
  Node node(fixedBudget(5));
  node.noise = 0.03;
  node.add("x", {0, 0.01, 1e9});
  node.add("y", {0, 0.0102, 1e9});  // 2% slower per image: splits differ by < 3% in total
  for (int r = 0; r < 10; ++r) node.round();
  std::map<std::string, int> settled = node.workers;
  int moves = 0;
  for (int r = 0; r < 60; ++r) moves += node.round();
  EXPECT_EQ(moves, 0) << "pool sizes flapped on noise";
  EXPECT_EQ(node.workers, settled);

  // The job with fewer cores gets 2.5x cheaper images: now it should have all it can.
  const std::string favoured = settled["x"] < settled["y"] ? "x" : "y";
  const std::string other = favoured == "x" ? "y" : "x";
  node.truth[favoured].b = 0.004;
  for (int r = 0; r < 20; ++r) node.round();
  EXPECT_EQ(node.workers[favoured], 4);
  EXPECT_EQ(node.workers[other], 1);
  EXPECT_EQ(node.round(), 0);
}

TEST(NodeBalancer, FollowsALevelShiftKeepingTheSlope) {
  Node node(fixedBudget(4));
  node.add("a", {0.002, 0.01, 1e9});
  for (int r = 0; r < 30; ++r) node.round();  // long at one size: other sizes fade
  ASSERT_FALSE(node.balancer.jobs()[0].exploring);
  ASSERT_EQ(node.workers["a"], 4);
  node.truth["a"] = {0.002, 0.03, 1e9};  // every image now costs 20 ms more
  node.round();
  EXPECT_NEAR(node.balancer.jobs()[0].model.b, 0.01, 1e-6);  // one odd window moves nothing
  node.round();
  ThroughputModel m = node.balancer.jobs()[0].model;
  EXPECT_FALSE(node.balancer.jobs()[0].exploring);  // no exploring again
  EXPECT_NEAR(m.a, 0.002, 1e-6);  // without the shift, the faded windows at 3 would bend it
  EXPECT_NEAR(m.b, 0.03, 1e-6);
}

TEST(NodeBalancer, LeavingJobsCoresGoToTheOthers) {
  Node node(fixedBudget(6));
  node.add("a", {0, 0.01, 1e9});
  node.add("b", {0, 0.01, 1e9});
  node.add("c", {0, 0.01, 1e9});
  for (int r = 0; r < 6; ++r) node.round();
  EXPECT_EQ(node.total(), 6);
  node.apply(node.balancer.removeJob("b"));
  node.truth.erase("b");
  node.workers.erase("b");
  EXPECT_EQ(node.total(), 6);
  EXPECT_EQ(node.workers["a"], 3);
  EXPECT_EQ(node.workers["c"], 3);
  EXPECT_TRUE(node.balancer.removeJob("nobody").changes.empty());
}

TEST(NodeBalancer, AutomaticBudgetIsHardwareMinusComputeThreads) {
  BalancerOptions options;
  options.hardwareCores = 8;
  NodeBalancer balancer(options);
  EXPECT_EQ(balancer.budget(), 8);
  balancer.addJob("a", {0, 2, 1, 8, 1});
  balancer.addJob("b", {0, 3, 1, 8, 1});
  EXPECT_EQ(balancer.budget(), 3);
  balancer.addJob("c", {0, 4, 1, 8, 1});
  EXPECT_EQ(balancer.budget(), 1);  // never below one core
}

TEST(NodeBalancer, FixedSizeJobsAreNotExploredAndIdsAreUnique) {
  NodeBalancer balancer(fixedBudget(6));
  Decision d = balancer.addJob("fixed", {0, 1, 2, 2, 1});
  EXPECT_EQ(d.changes.at("fixed"), 2);
  EXPECT_FALSE(balancer.jobs()[0].exploring);
  EXPECT_THROW(balancer.addJob("fixed", {0, 1, 1, 4, 1}), InputError);
  EXPECT_THROW(balancer.addJob("bad", {0, 1, 0, 4, 1}), InputError);
  EXPECT_THROW(balancer.addJob("bad", {0, 1, 3, 2, 1}), InputError);
}

}  // namespace
}  // namespace tl::coordinator
