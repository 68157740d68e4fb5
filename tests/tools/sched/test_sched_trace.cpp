// The trace reader: documented columns, every bad row reported by its line.
#include <gtest/gtest.h>

#include "common/check.h"
#include "tools/sched/sim/profiles.h"
#include "tools/sched/sim/trace.h"

namespace tl::sched {
namespace {

std::string errorOf(const std::string& text) {
  try {
    parseTrace(text, "t.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SchedTrace, ReadsColumnsInAnyOrderAndSortsByArrival) {
  const auto jobs = parseTrace(
      "# a comment\nmodel,id,arrival_s,work_samples,min_gpus,max_gpus,queue\n"
      "cnn,late,20,1000,1,4,research\nresnet20,early,5,50,2,2,prod\n",
      "t.csv");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, "early");
  EXPECT_EQ(jobs[0].queue, "prod");
  EXPECT_EQ(jobs[1].model, "cnn");
  EXPECT_EQ(jobs[1].maxGpus, 4);
  EXPECT_EQ(jobs[1].logicalWorkers(), 4);
  EXPECT_EQ(jobs[1].gangGpus(), 4);  // no request_gpus: the gang is max_gpus
  // And back: formatTrace writes what parseTrace reads.
  const auto again = parseTrace(formatTrace(jobs), "again");
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1].work, 1000);
  EXPECT_EQ(again[0].minGpus, 2);
}

TEST(SchedTrace, ReportsEveryBadRowByItsLine) {
  const std::string text =
      "id,arrival_s,model,work_samples,min_gpus,max_gpus\n"  // line 1
      "ok,0,cnn,10,1,1\n"                                   // line 2
      "neg,-1,cnn,10,1,1\n"                                 // line 3
      "ok2,1,cnn,10,1,1\n"                                  // line 4
      "zero,1,cnn,0,1,1\n"                                  // line 5
      "inv,1,cnn,10,4,2\n"                                  // line 6
      "ok,2,cnn,10,1,1\n"                                   // line 7: duplicate id
      "short,2,cnn\n"                                       // line 8
      "frac,2,cnn,10,1.5,2\n";                              // line 9
  const std::string e = errorOf(text);
  EXPECT_NE(e.find("6 bad row(s)"), std::string::npos) << e;
  EXPECT_NE(e.find("t.csv:3: arrival_s: must be >= 0, got -1"), std::string::npos) << e;
  EXPECT_NE(e.find("t.csv:5: work_samples: must be > 0"), std::string::npos) << e;
  EXPECT_NE(e.find("t.csv:6: max_gpus: must be >= min_gpus (4), got 2"), std::string::npos) << e;
  EXPECT_NE(e.find("t.csv:7: id: 'ok' is already used on line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("t.csv:8: row: expected 6 fields, got 3"), std::string::npos) << e;
  EXPECT_NE(e.find("t.csv:9: min_gpus: expected a whole number"), std::string::npos) << e;
  EXPECT_EQ(e.find("t.csv:2:"), std::string::npos) << e;
  EXPECT_EQ(e.find("t.csv:4:"), std::string::npos) << e;
}

TEST(SchedTrace, BadHeadersAreNamed) {
  EXPECT_NE(errorOf("id,arrival_s,model,work_samples,min_gpus\n").find("lacks column 'max_gpus'"),
            std::string::npos);
  EXPECT_NE(errorOf("id,arrival,model\n").find("unknown column 'arrival'"), std::string::npos);
  EXPECT_NE(errorOf("").find("empty trace"), std::string::npos);
  EXPECT_NE(errorOf("id,arrival_s,model,work_samples,min_gpus,max_gpus,request_gpus\nx,0,m,1,2,4,8\n")
                .find("t.csv:2: request_gpus: must be between min_gpus and max_gpus (2..4), got 8"),
            std::string::npos);
  EXPECT_NE(errorOf("id,arrival_s,model,work_samples,min_gpus,max_gpus\nx,0,m,1,1,1,9\n")
                .find("t.csv:2: row: expected 6 fields, got 7"),
            std::string::npos);
}

TEST(SchedTrace, ClusterQueuesAndFitAreChecked) {
  EXPECT_THROW(parseKinds("fast:0", "--cluster"), InputError);
  EXPECT_THROW(parseKinds("fast:2,fast:3", "--cluster"), InputError);
  EXPECT_THROW(parseQueues("a:0.7:1,b:0.5:1", "--queues"), InputError);
  ClusterSpec c;
  c.kinds = parseKinds("fast:4,slow:2", "--cluster");
  auto jobs = parseTrace("id,arrival_s,model,work_samples,min_gpus,max_gpus\nbig,0,m,1,1,8\n", "t");
  EXPECT_THROW(checkTraceFits(jobs, c), InputError);
  c.queues = parseQueues("default:0.5:0.5", "--queues");
  auto four = parseTrace("id,arrival_s,model,work_samples,min_gpus,max_gpus\nq,0,m,1,1,4\n", "t");
  EXPECT_THROW(checkTraceFits(four, c), InputError);  // 4 GPUs > half of 6
  c.queues = parseQueues("default:0.5:1", "--queues");
  EXPECT_NO_THROW(checkTraceFits(four, c));
}

TEST(SchedProfiles, InterpolateAndReportBadRowsByLine) {
  const auto p = ProfileSet::parse("model,kind,gpus,samples_per_s\nm,k,1,10\nm,k,4,34\n", "p.csv");
  EXPECT_DOUBLE_EQ(p.rate("m", "k", 1), 10);
  EXPECT_DOUBLE_EQ(p.rate("m", "k", 2), 18);    // linear between 1 and 4 GPUs
  EXPECT_DOUBLE_EQ(p.rate("m", "k", 8), 68);    // the last per-GPU rate beyond 4
  EXPECT_THROW(p.rate("m", "other", 1), InputError);
  try {
    ProfileSet::parse("model,kind,gpus,samples_per_s\nm,k,1,10\nm,k,2,-3\n", "p.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p.csv:3: samples_per_s must be > 0"), std::string::npos)
        << e.what();
  }
  const auto builtin = ProfileSet::builtin();
  EXPECT_GT(builtin.rate("resnet20", "fast", 1), builtin.rate("resnet20", "slow", 1));
}

}  // namespace
}  // namespace tl::sched
