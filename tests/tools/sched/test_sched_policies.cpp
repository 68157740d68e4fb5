// The policies on hand-made traces whose JCTs can be worked out by hand.
#include <gtest/gtest.h>

#include "common/check.h"
#include "tools/sched/sim/policy.h"
#include "tools/sched/sim/simulator.h"

namespace tl::sched {
namespace {

// Rates scale linearly: n GPUs of fast do 10n samples/s, of slow 5n.
ProfileSet linearProfiles() {
  return ProfileSet::parse(
      "model,kind,gpus,samples_per_s\nm,fast,1,10\nm,fast,2,20\nm,fast,4,40\n"
      "m,slow,1,5\nm,slow,2,10\nm,slow,4,20\n",
      "test profiles");
}

JobSpec job(const std::string& id, double arrival, double work, int minGpus, int maxGpus,
            const std::string& queue = "default", int ests = 0) {
  JobSpec j;
  j.id = id;
  j.arrival = arrival;
  j.model = "m";
  j.work = work;
  j.minGpus = minGpus;
  j.maxGpus = maxGpus;
  j.ests = ests;
  j.queue = queue;
  return j;
}

SimResult run(const std::string& policy, const ClusterSpec& cluster, const std::vector<JobSpec>& jobs,
              double rescaleCost = 0) {
  ThroughputModel model(cluster, linearProfiles());
  auto p = makePolicy(policy, model, {rescaleCost});
  return simulate(jobs, model, *p, {rescaleCost});
}

ClusterSpec cluster(const std::string& kinds, const std::string& queues = "") {
  ClusterSpec c;
  c.kinds = parseKinds(kinds, "test");
  if (!queues.empty()) c.queues = parseQueues(queues, "test");
  return c;
}

TEST(SchedPolicies, TwoJobsOneSlotRunOneAfterTheOtherUnderEveryPolicy) {
  // A needs 10 s, B (arriving at 1 s) 5 s: B waits for A under every policy.
  const std::vector<JobSpec> jobs{job("A", 0, 100, 1, 1), job("B", 1, 50, 1, 1)};
  for (const auto& name : policyNames()) {
    const auto r = run(name, cluster("fast:1"), jobs);
    EXPECT_DOUBLE_EQ(r.jobs[0].jct(), 10) << name;
    EXPECT_DOUBLE_EQ(r.jobs[1].jct(), 14) << name;
    EXPECT_DOUBLE_EQ(r.jobs[1].queueing(), 9) << name;
    EXPECT_DOUBLE_EQ(r.summary.makespan, 15) << name;
    EXPECT_DOUBLE_EQ(r.summary.meanJct, 12) << name;
    EXPECT_DOUBLE_EQ(r.summary.utilisation, 1) << name;
  }
}

TEST(SchedPolicies, YarnCapacityCapsAQueueAtItsMaximumShareAndLendsIdleGpus) {
  const std::vector<JobSpec> jobs{job("a1", 0, 100, 1, 1, "a"), job("a2", 0, 100, 1, 1, "a"),
                                  job("b1", 1, 100, 1, 1, "b")};
  // Queue a may use at most half the cluster: a2 waits although a GPU is idle until b1 comes.
  auto capped = run("yarn-cs", cluster("fast:2", "a:0.5:0.5,b:0.5:1"), jobs);
  EXPECT_DOUBLE_EQ(capped.jobs[1].jct(), 20);
  EXPECT_DOUBLE_EQ(capped.jobs[2].jct(), 10);
  // Borrowing up to the whole cluster: a2 starts at once and b1 waits for a GPU (no preemption).
  auto borrowing = run("yarn-cs", cluster("fast:2", "a:0.5:1,b:0.5:1"), jobs);
  EXPECT_DOUBLE_EQ(borrowing.jobs[1].jct(), 10);
  EXPECT_DOUBLE_EQ(borrowing.jobs[2].jct(), 19);
  EXPECT_EQ(borrowing.jobs[2].rescales, 0);
}

TEST(SchedPolicies, YarnStartsEveryWaitingJobThatFitsNotOnlyTheFirst) {
  // Head of the queue wants 2 GPUs, only 1 is free: the 1-GPU job behind it starts anyway.
  const std::vector<JobSpec> jobs{job("long", 0, 1000, 1, 1), job("big", 1, 200, 2, 2),
                                  job("small", 2, 100, 1, 1)};
  auto r = run("yarn-cs", cluster("fast:2"), jobs);
  EXPECT_DOUBLE_EQ(r.jobs[2].queueing(), 0);
  EXPECT_DOUBLE_EQ(r.jobs[1].jct(), 100 + 10 - 1);  // after `long` ends at 100, 10 s on 2 GPUs
}

TEST(SchedPolicies, LasPreemptsAJobThatCrossesItsServiceThresholdAndChargesTheResume) {
  // A needs 7200 s on 1 GPU; B (100 s) arrives at 100 s and waits until A has attained one
  // GPU-hour (t = 3600), then runs; A resumes at 3700 and pays the rescale cost.
  const std::vector<JobSpec> jobs{job("A", 0, 72000, 1, 1), job("B", 100, 1000, 1, 1)};
  auto r = run("las", cluster("fast:1"), jobs, 10);
  EXPECT_NEAR(r.jobs[1].jct(), 3600, 1e-6);
  EXPECT_NEAR(r.jobs[0].jct(), 7310, 1e-6);
  EXPECT_EQ(r.jobs[0].rescales, 2);  // preempted, resumed
  auto yarn = run("yarn-cs", cluster("fast:1"), jobs, 10);
  EXPECT_NEAR(yarn.jobs[1].jct(), 7200, 1e-6);
}

TEST(SchedPolicies, ElasticShrinksARunningJobToAdmitAnArrivalAndPaysTheRescale) {
  // A (400 samples, up to 4 GPUs at 10/s each) runs alone on 4 GPUs; at 5 s B arrives: both
  // get 2 GPUs (3 would not be faster than 2 for 4 ESTs). A: 200 left, a 1 s pause, 9 s at
  // 20/s; B ends at 15 s; A grows back to 4 GPUs (another 1 s pause) and does its last 20
  // samples at 40/s: 16.5 s.
  const std::vector<JobSpec> jobs{job("A", 0, 400, 1, 4), job("B", 5, 200, 1, 4)};
  auto r = run("elastic", cluster("fast:4"), jobs, 1);
  EXPECT_NEAR(r.jobs[0].jct(), 16.5, 1e-9);
  EXPECT_NEAR(r.jobs[1].jct(), 10, 1e-9);
  EXPECT_EQ(r.jobs[0].rescales, 2);
  EXPECT_EQ(r.jobs[1].rescales, 0);
  // Non-elastic: B waits for A's whole gang.
  auto yarn = run("yarn-cs", cluster("fast:4"), jobs, 1);
  EXPECT_NEAR(yarn.jobs[0].jct(), 10, 1e-9);
  EXPECT_NEAR(yarn.jobs[1].jct(), 10, 1e-9);
}

TEST(SchedPolicies, HeterogeneousElasticUsesASlowerKindTooWithTheEstsPlacedByThePlanner) {
  // 3 ESTs, up to 2 GPUs; one fast (10/s) and one slow (5/s) GPU. Single kind: the fast one,
  // 30 s. Both kinds: the planner puts 2 ESTs on fast and 1 on slow: 15 samples/s, 20 s.
  const std::vector<JobSpec> jobs{job("A", 0, 300, 1, 2, "default", 3)};
  EXPECT_NEAR(run("elastic", cluster("fast:1,slow:1"), jobs).jobs[0].jct(), 30, 1e-9);
  EXPECT_NEAR(run("elastic-hetero", cluster("fast:1,slow:1"), jobs).jobs[0].jct(), 20, 1e-9);
}

// The trace both goodput policies are worked out on: fast:4 at 10 samples/s per GPU, A (4000
// samples) at 0 and B (1200) at 30 s, 1..4 GPUs with 4 ESTs (3 GPUs are no faster than 2).
struct TwoJobs {
  double aJct, bJct, bQueueing;
  int aRescales;
};
void expectTwoJobs(const std::string& policy, double rescaleCost, const TwoJobs& e) {
  const std::vector<JobSpec> jobs{job("A", 0, 4000, 1, 4), job("B", 30, 1200, 1, 4)};
  const auto r = run(policy, cluster("fast:4"), jobs, rescaleCost);
  EXPECT_NEAR(r.jobs[0].jct(), e.aJct, 1e-9) << policy << " at " << rescaleCost << " s";
  EXPECT_NEAR(r.jobs[1].jct(), e.bJct, 1e-9) << policy << " at " << rescaleCost << " s";
  EXPECT_NEAR(r.jobs[1].queueing(), e.bQueueing, 1e-9) << policy << " at " << rescaleCost << " s";
  EXPECT_EQ(r.jobs[0].rescales, e.aRescales) << policy << " at " << rescaleCost << " s";
}

TEST(SchedPolicies, GoodputReoptimisesEveryIntervalAndChargesEachChangeTheRescaleCost) {
  // fast:4 at 10 samples/s per GPU; A (4000 samples) and B (1200, arriving at 30 s) may use 1..4
  // GPUs with 4 ESTs (3 GPUs are no faster than 2). Rescale cost 6 s, interval 60 s.
  //  t=0 (an interval): A alone; its fair share is 4 GPUs; it takes all 4 (40/s).
  //  t=30: B arrives; between intervals running jobs are kept and no GPU is free: B waits.
  //  t=60: re-optimised: both hold 1 (admission), fair share 2 GPUs each (c = 20/s); the first
  //    GPU step of each lowers c/rate by 20 (1/10 - 1/20) = 1 per GPU: A (earlier) then B take
  //    one; A's next step (2 more GPUs) does not fit. A2 B2 scores 0 waiting against 1 for
  //    keeping A on 4: taken. A has done 2400; it pauses until 66 and runs at 20/s.
  //  t=120: B ends (1200 at 20/s from 60): JCT 90, 30 s of it queueing. Also an interval: A
  //    alone, fair share 4 (c = 40): growing to 4 scores 40 / (40 (1 - 6/60)) = 1.11, keeping
  //    2 scores 40 / 20 = 2: it grows. A has 1600 - 54 x 20 = 520 left: pause to 126, 13 s at
  //    40/s: ends at 139.
  expectTwoJobs("goodput", 6, {139, 90, 30, 2});
  // At a rescale cost of 40 s the grow at 120 s would score 40 / (40 (1 - 40/60)) = 3 against 2
  // for keeping: A stays on 2 GPUs. From 60 it pauses to 100, then does its 1600 at 20/s: 180.
  expectTwoJobs("goodput", 40, {180, 90, 30, 1});
  // elastic-hetero shrinks A for B at once (B: 1200 at 20/s from 30, JCT 60): no interval wait.
  const std::vector<JobSpec> jobs{job("A", 0, 4000, 1, 4), job("B", 30, 1200, 1, 4)};
  EXPECT_NEAR(run("elastic-hetero", cluster("fast:4"), jobs, 6).jobs[1].jct(), 60, 1e-9);
}

TEST(SchedPolicies, GoodputLeavesFreedGpusToTheNextIntervalButFillsThemThen) {
  // fast:2 and slow:2 (10/s and 5/s per GPU); X (500 samples) and Y (1000), 1..2 GPUs with 2
  // ESTs, both at 0 (an interval). Admission gives each a fast GPU. A slow GPU on top does
  // not help (2 ESTs on fast + slow: the planner's best is 1 + 1, max(1/10, 1/5) = 0.2 s a
  // sample pair, or 2 on fast, 2/10: 10/s either way), so both run at 10/s. X ends at 50 s.
  // 50 s is no interval: Y is kept on one GPU. At 60 s Y (400 left) is alone, fair share 2
  // fast GPUs; growing onto the freed fast GPU doubles its rate (free rescale): 20 s more.
  const std::vector<JobSpec> jobs{job("X", 0, 500, 1, 2), job("Y", 0, 1000, 1, 2)};
  auto r = run("goodput", cluster("fast:2,slow:2"), jobs, 0);
  EXPECT_NEAR(r.jobs[0].jct(), 50, 1e-9);
  EXPECT_NEAR(r.jobs[1].jct(), 80, 1e-9);
  EXPECT_EQ(r.jobs[1].rescales, 1);
  // elastic-hetero grows Y at once when X ends: 500 left at 20/s from 50 s.
  EXPECT_NEAR(run("elastic-hetero", cluster("fast:2,slow:2"), jobs, 0).jobs[1].jct(), 75, 1e-9);
}

TEST(SchedPolicies, HeteroGoodputAdmitsAtOnceAndGrowsInPlaceOnlyWhenThePauseIsWorthIt) {
  // The goodput trace above: fast:4 at 10 samples/s per GPU, A (4000 samples) and B (1200, at
  // 30 s), 1..4 GPUs with 4 ESTs (3 GPUs are no faster than 2). Rescale cost 6 s, interval
  // 60 s: a started job that changes is charged rate x 0.9.
  //  t=0: A alone, fair share 4 (c = 40): admitted at 1, steps to 2 (gain 2) and 4: 40/s.
  //  t=30 (an event, no interval): B arrives on a full cluster. Keeping A on 4 leaves B
  //    waiting, so the whole allocation is re-planned: fair shares 2 (c = 20); A (1 of its
  //    4 kept) and B admitted at 1; A's step to 2 gains 20 (1/9 - 1/18) = 1.11 (both charged),
  //    B's 20 (1/10 - 1/20) = 1; then B's. A2 B2, no job waiting: taken. A pauses to 36.
  //  B: 1200 at 20/s from 30: ends at 90, JCT 60, no queueing (goodput: 90, 30 of it waiting).
  //  A has done 1200 + 54 x 20 = 2280 by 90.
  //  t=90: B ends. A alone, fair share 4 (c = 40); its step 2 -> 4 charged is 36/s > 20/s:
  //    it grows in place, pauses to 96, does its 1720 at 40/s: ends at 139.
  expectTwoJobs("hetero-goodput", 6, {139, 60, 0, 2});
  const std::vector<JobSpec> jobs{job("A", 0, 4000, 1, 4), job("B", 30, 1200, 1, 4)};
  EXPECT_EQ(run("hetero-goodput", cluster("fast:4"), jobs, 6).jobs[1].rescales, 0);
  // At 40 s a pause is charged rate x (1 - 40/60) = 1/3. At 30 s A still shrinks for B (a
  // waiting job outweighs any rate): paused to 70, 400 done by 90 (2400 left). At 90 growing
  // to 4 is worth 40/3 = 13.3/s < 20/s: A stays on 2 and ends 120 s later, at 210.
  expectTwoJobs("hetero-goodput", 40, {210, 60, 0, 1});
}

TEST(SchedPolicies, HeteroGoodputGivesALongRunningJobsGpuToANewOneAndMixesKinds) {
  // fast:1. A: 50000 samples (5000 s at 10/s), B: 100 samples arriving at 4000 s, 1 GPU each.
  // FIFO admission (goodput, elastic-hetero): B waits for A: JCTs 5000 and 1010.
  // hetero-goodput: by 4000 s A has attained 4000 GPU-seconds, past the 1 GPU-hour level; B
  // (level 0) is admitted first and A waits: B ends at 4010 (JCT 10); A resumes at 4010 with
  // 10000 samples left: ends at 5010. Mean JCT 2510 against 3005.
  const std::vector<JobSpec> jobs{job("A", 0, 50000, 1, 1), job("B", 4000, 100, 1, 1)};
  auto r = run("hetero-goodput", cluster("fast:1"), jobs);
  EXPECT_NEAR(r.jobs[0].jct(), 5010, 1e-9);
  EXPECT_NEAR(r.jobs[1].jct(), 10, 1e-9);
  EXPECT_EQ(r.jobs[0].rescales, 2);  // preempted and resumed
  for (const char* fifo : {"goodput", "elastic-hetero"}) {
    auto f = run(fifo, cluster("fast:1"), jobs);
    EXPECT_NEAR(f.jobs[0].jct(), 5000, 1e-9) << fifo;
    EXPECT_NEAR(f.jobs[1].jct(), 1010, 1e-9) << fifo;
  }
  // Kinds: 3 ESTs on one fast and one slow GPU (2 + 1 by the planner): 15/s, 300 in 20 s.
  const std::vector<JobSpec> mixed{job("M", 0, 300, 1, 2, "default", 3)};
  EXPECT_NEAR(run("hetero-goodput", cluster("fast:1,slow:1"), mixed).jobs[0].jct(), 20, 1e-9);
}

TEST(SchedPolicies, HeteroGoodputGivesGrowthToTheJobWithLessAttainedService) {
  // fast:3, rescales free. A: 10000 samples, 1..2 GPUs, 2 ESTs (10/s on 1, 20/s on 2). B:
  // 1500 samples at 200 s, 1..3 GPUs, 3 ESTs (10/s on 1; 15/s on 2, the planner's 2 + 1).
  //  t=0: A alone grows to 2: 20/s; by 200 s it has attained 400 GPU-seconds.
  //  t=200: fair shares floor(3/2) = 1: c = 10 for both. Admitted at 1 each, one GPU free. A
  //    is past the first rung (360 GPU-seconds), so its c is weighted 10 / sqrt(10) = 3.16:
  //    A's step 1 -> 2 gains 3.16 (1/10 - 1/20) = 0.16, B's 10 (1/10 - 1/15) = 0.33: B gets
  //    it. Re-planned A1 B2 costs 3.16/10 + 10/15 = 0.98 against keeping A2 B1's 3.16/20 +
  //    10/10 = 1.16: taken. B: 1500 at 15/s, ends at 300 (JCT 100). A does 1000 at 10/s.
  //  t=300: A alone grows back to 2: 5000 left at 20/s, ends at 550.
  // Unweighted (the policy before growth weights), A's step gains 0.5 against B's 0.33: A
  // keeps 2 and ends at 500, B runs on 1 GPU: JCT 150.
  const std::vector<JobSpec> jobs{job("A", 0, 10000, 1, 2, "default", 2),
                                  job("B", 200, 1500, 1, 3, "default", 3)};
  auto r = run("hetero-goodput", cluster("fast:3"), jobs);
  EXPECT_NEAR(r.jobs[0].jct(), 550, 1e-9);
  EXPECT_NEAR(r.jobs[1].jct(), 100, 1e-9);
  EXPECT_EQ(r.jobs[0].rescales, 2);  // shrunk for B, grown back
  EXPECT_EQ(r.jobs[1].rescales, 0);
  // goodput (unweighted, FIFO) keeps A on 2 (B waits for no tick: it starts on the free GPU).
  auto g = run("goodput", cluster("fast:3"), jobs);
  EXPECT_NEAR(g.jobs[1].jct(), 150, 1e-9);
}

SimResult runInPlace(const std::string& policy, const ClusterSpec& cluster,
                     const std::vector<JobSpec>& jobs) {
  ThroughputModel model(cluster, linearProfiles());
  PolicyOptions o;
  o.inPlaceOnly = true;
  auto p = makePolicy(policy, model, o);
  return simulate(jobs, model, *p, {});
}

TEST(SchedPolicies, HeteroGoodputInPlaceNeitherMixesKindsNorMovesNorPreempts) {
  // What tl-sched's real jobs can do (PolicyOptions::inPlaceOnly); rescales cost nothing here.
  // Kinds: M (3 ESTs) on fast:1,slow:1 mixes them at 15/s otherwise (300 in 20 s); in place it
  // holds the fast GPU alone, 3 ESTs on it at 10/s: 30 s.
  const std::vector<JobSpec> mixed{job("M", 0, 300, 1, 2, "default", 3)};
  EXPECT_NEAR(run("hetero-goodput", cluster("fast:1,slow:1"), mixed).jobs[0].jct(), 20, 1e-9);
  EXPECT_NEAR(runInPlace("hetero-goodput", cluster("fast:1,slow:1"), mixed).jobs[0].jct(), 30, 1e-9);
  // Moves: A (1000 samples) takes fast at 0, B (1000, at 1 s) slow; at 100 s A ends. Otherwise
  // B moves to fast: 495 done at 5/s, 505 left at 10/s: ends at 150.5 (JCT 149.5). In place
  // it stays on slow: 1000 / 5 = 200 s.
  const std::vector<JobSpec> two{job("A", 0, 1000, 1, 1), job("B", 1, 1000, 1, 1)};
  auto moved = run("hetero-goodput", cluster("fast:1,slow:1"), two);
  EXPECT_NEAR(moved.jobs[1].jct(), 149.5, 1e-9);
  EXPECT_EQ(moved.jobs[1].rescales, 1);
  auto kept = runInPlace("hetero-goodput", cluster("fast:1,slow:1"), two);
  EXPECT_NEAR(kept.jobs[0].jct(), 100, 1e-9);
  EXPECT_NEAR(kept.jobs[1].jct(), 200, 1e-9);
  EXPECT_EQ(kept.jobs[1].rescales, 0);
  // Preemption: the least-attained-service trace above. In place B waits for A, as in FIFO.
  const std::vector<JobSpec> las{job("A", 0, 50000, 1, 1), job("B", 4000, 100, 1, 1)};
  auto fifo = runInPlace("hetero-goodput", cluster("fast:1"), las);
  EXPECT_NEAR(fifo.jobs[0].jct(), 5000, 1e-9);
  EXPECT_NEAR(fifo.jobs[1].jct(), 1010, 1e-9);
  EXPECT_EQ(fifo.jobs[0].rescales, 0);
  // It still shrinks in place for an arrival and grows back: fast:2, A (2000, 2 ESTs, 1..2)
  // at 20/s; B (100, 1 GPU) at 10 s: A shrinks to 1 (200 done), B runs 10 s (JCT 10), A does
  // 100 more at 10/s and grows back at 20 s: 1700 left at 20/s, ends at 105.
  const std::vector<JobSpec> arrival{job("A", 0, 2000, 1, 2, "default", 2), job("B", 10, 100, 1, 1)};
  auto shrunk = runInPlace("hetero-goodput", cluster("fast:2"), arrival);
  EXPECT_NEAR(shrunk.jobs[0].jct(), 105, 1e-9);
  EXPECT_NEAR(shrunk.jobs[1].jct(), 10, 1e-9);
  EXPECT_EQ(shrunk.jobs[0].rescales, 2);
}

TEST(SchedPolicies, InPlaceOnlyIsRefusedByPoliciesThatCannotHonourIt) {
  ThroughputModel model(cluster("fast:1"), linearProfiles());
  PolicyOptions o;
  o.inPlaceOnly = true;
  for (const char* name : {"las", "elastic-hetero", "goodput"}) {
    try {
      makePolicy(name, model, o);
      ADD_FAILURE() << name << " accepted inPlaceOnly";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("policy ") + name), std::string::npos) << e.what();
    }
  }
  for (const char* name : {"yarn-cs", "elastic", "hetero-goodput"}) EXPECT_NO_THROW(makePolicy(name, model, o));
}

TEST(SchedPolicies, ThroughputModelFollowsTheProfilesAndThePlannerRule) {
  ThroughputModel model(cluster("fast:4,slow:4"), linearProfiles());
  JobSpec j = job("j", 0, 1, 1, 4, "default", 4);
  EXPECT_DOUBLE_EQ(model.rate(j, {4, 0}), 40);
  EXPECT_DOUBLE_EQ(model.rate(j, {3, 0}), 20);  // 2+1+1 ESTs: the busiest device sets the pace
  EXPECT_DOUBLE_EQ(model.rate(j, {0, 0}), 0);
  EXPECT_EQ(model.kindsBySpeed("m"), (std::vector<int>{0, 1}));
}

TEST(SchedPolicies, UnknownPolicyIsAnInputError) {
  ThroughputModel model(cluster("fast:1"), linearProfiles());
  EXPECT_THROW(makePolicy("fifo", model), InputError);
}

}  // namespace
}  // namespace tl::sched
