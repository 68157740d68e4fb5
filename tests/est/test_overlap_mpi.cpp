// Overlapping the gradient reduction with backward (--overlap on), on real processes
// (mpirun -np 2):
//  - the communicator's startAllreduce: several started, waited later, the same sums as the
//    blocking call; one abandoned unfinished fails its communicator for good;
//  - the reducers: a streamed contribution (tensor by tensor, out of order, some never
//    streamed) gives the bits of the unstreamed one, in fp32 and exact mode, and an exact step
//    whose gradients overflow the speculative scales still asks for a replay, whose streamed
//    recomputation then gives the unstreamed result;
//  - whole jobs: the same params_sha256 with overlap on and off (exact and fp32, one and two
//    ESTs per process), and with overlap on, buckets start their allreduce while backward runs
//    (the step metrics say how many).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "common/check.h"
#include "dataload/synthetic.h"
#include "est/executor_builder.h"
#include "runtime/reduce/gradient_reducer.h"
#include "tests/est/layout_runs.h"
#include "tests/runtime/comm/mpi_test_world.h"
#include "tests/support/run_command.h"

namespace tl::est {
namespace {

comm::Communicator& world() { return comm::testing::world(); }

std::string sharedDir(const std::string& name) {
  const std::string d = std::string(std::getenv("TL_TEST_TMP") ? std::getenv("TL_TEST_TMP") : "/tmp/tl-test") + "/" + name;
  if (world().rank() == 0) tl::testing::freshDir(name);
  world().barrier();
  return d;
}

TEST(StartAllreduce, StartedCollectivesFinishWithTheBlockingSums) {
  ASSERT_EQ(world().size(), 2);
  const int rank = world().rank();
  at::Tensor a = at::arange(1000, at::kFloat) * float(rank + 1);
  at::Tensor b = at::full({5000}, int64_t(rank + 7), at::kLong);
  at::Tensor c = a.clone();
  auto pa = world().startAllreduce(a, comm::ReduceOp::Sum);
  auto pb = world().startAllreduce(b, comm::ReduceOp::Max);
  world().allreduce(c, comm::ReduceOp::Sum);  // a blocking one between them keeps the order
  pb->test();
  pa->wait();
  pb->wait();
  pb->wait();  // again: returns at once
  EXPECT_TRUE(pa->test());
  EXPECT_TRUE(at::equal(a, at::arange(1000, at::kFloat) * 3.0f));
  EXPECT_TRUE(at::equal(a, c));
  EXPECT_TRUE(at::equal(b, at::full({5000}, int64_t(8), at::kLong)));
}

TEST(StartAllreduce, AnAbandonedCollectiveFailsTheCommunicator) {
  auto comm = world().split(0, world().rank());
  ASSERT_NE(comm, nullptr);
  at::Tensor t = at::ones({1 << 16});
  comm->startAllreduce(t, comm::ReduceOp::Sum).reset();  // dropped unwaited
  at::Tensor u = at::ones({1});
  try {
    comm->allreduce(u, comm::ReduceOp::Sum);
    ADD_FAILURE() << "a communicator with an abandoned collective went on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("abandoned"), std::string::npos) << e.what();
  }
  // The abandoned operation is still in MPI's hands, as after a timeout (whose answer is to end
  // the job): its communicator must stay until MPI_Finalize, or Open MPI's progress engine
  // would touch it after MPI_Comm_free.
  static std::unique_ptr<comm::Communicator> keptUntilExit;
  keptUntilExit = std::move(comm);
  world().barrier();
}

// Parameters of a few shapes; with a small bucket they fill several buckets.
std::vector<at::Tensor> params() {
  return {at::zeros({300}), at::zeros({17, 5}), at::zeros({1000}), at::zeros({3}), at::zeros({40, 40})};
}

// Contribution k of this rank: values that differ per rank, contribution and element.
std::vector<at::Tensor> contribution(int k, float magnitude) {
  std::vector<at::Tensor> out;
  int i = 0;
  for (const auto& p : params()) {
    const auto seed = uint64_t(1000 * world().rank() + 10 * k + i++);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    out.push_back(at::randn(p.sizes(), gen) * magnitude);
  }
  return out;
}

// One round of `contributions` per rank; streamed: the last one goes tensor by tensor in an
// order of its own (as autograd would), leaving tensor 3 to addContribution.
bool round(reduce::GradientReducer& r, int contributions, float magnitude, bool streamed,
           std::vector<at::Tensor>& out) {
  r.beginStep();
  for (int k = 0; k < contributions; ++k) {
    const auto g = contribution(k, magnitude);
    if (streamed && k + 1 == contributions) {
      r.streamContribution();
      for (size_t t : {4, 2, 1, 0}) r.addGradient(t, g[t]);
    }
    r.addContribution(g);
  }
  return r.finish(out, int64_t(contributions) * world().size());
}

std::vector<at::Tensor> outputs() {
  std::vector<at::Tensor> out;
  for (const auto& p : params()) out.push_back(at::full(p.sizes(), 42.0f));
  return out;
}

bool same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (!at::equal(a[i], b[i])) return false;
  }
  return true;
}

std::unique_ptr<reduce::GradientReducer> reducer(Reduction mode) {
  const int64_t bucketBytes = 4096;  // several buckets
  return reduce::createReducer(mode, world(), params(), {"a", "b", "c", "d", "e"}, bucketBytes);
}

TEST(StreamedContribution, Fp32MatchesUnstreamedBits) {
  for (int contributions : {1, 2}) {
    auto plain = reducer(Reduction::Fp32);
    auto streamed = reducer(Reduction::Fp32);
    auto a = outputs(), b = outputs();
    ASSERT_TRUE(round(*plain, contributions, 1.0f, false, a));
    ASSERT_TRUE(round(*streamed, contributions, 1.0f, true, b));
    EXPECT_TRUE(same(a, b)) << contributions << " contributions";
    EXPECT_GT(streamed->bucketStartTimes().size(), 2u);
  }
}

TEST(StreamedContribution, ExactMatchesUnstreamedBitsAndStillReplaysAnOverflow) {
  for (int contributions : {1, 2}) {
    auto plain = reducer(Reduction::Exact);
    auto streamed = reducer(Reduction::Exact);
    auto a = outputs(), b = outputs();
    // The first step sets the scales (a replay), the second fits them.
    for (auto* r : {plain.get(), streamed.get()}) {
      auto& out = r == plain.get() ? a : b;
      const bool s = r == streamed.get();
      ASSERT_FALSE(round(*r, contributions, 1.0f, s, out));
      ASSERT_TRUE(round(*r, contributions, 1.0f, s, out));
    }
    EXPECT_TRUE(same(a, b));
    // Gradients 2^20 times larger overflow the speculative scales: the streamed step, whose
    // buckets were already summed, must still be replayed and leave the output untouched.
    std::vector<at::Tensor> kept;
    for (const auto& t : b) kept.push_back(t.clone());
    EXPECT_FALSE(round(*streamed, contributions, 1048576.0f, true, b));
    EXPECT_TRUE(same(b, kept));
    EXPECT_EQ(streamed->replays(), 2);
    ASSERT_TRUE(round(*streamed, contributions, 1048576.0f, true, b));
    ASSERT_FALSE(round(*plain, contributions, 1048576.0f, false, a));
    ASSERT_TRUE(round(*plain, contributions, 1048576.0f, false, a));
    EXPECT_TRUE(same(a, b)) << contributions << " contributions";
  }
}

const std::string& dataDir() {
  static const std::string dir = [] {
    const std::string d = sharedDir("overlap_mpi_data");
    if (world().rank() == 0) {
      data::SyntheticOptions so;
      so.trainImages = 64;
      so.testImages = 8;
      so.seed = 3;
      data::writeSyntheticCifar10(so, d);
    }
    world().barrier();
    return d;
  }();
  return dir;
}

struct JobRun {
  std::string sha;
  int64_t replays = 0;
  std::vector<nlohmann::json> steps;  // rank 0's step records
};

JobRun train(const std::string& reduction, int perProcess, bool overlap) {
  JobConfig job = testing::layoutTestJob(dataDir(), reduction);
  job.steps = 4;
  job.overlap = overlap;
  job.bucketBytes = 64 << 10;  // the CNN's gradients in several buckets
  const std::string metricsPath = sharedDir("overlap_mpi_metrics") + "/metrics.jsonl";
  auto executor = ExecutorBuilder(job).layout(Placement::withIdleMembers({perProcess, perProcess}), world(), world()).build();
  train::MetricsLog metrics = world().rank() == 0 ? train::MetricsLog(metricsPath) : train::MetricsLog();
  const train::TrainResult r = executor->run(metrics, nullptr);
  JobRun out{r.paramsSha256, r.replays, {}};
  if (world().rank() == 0) {
    std::ifstream in(metricsPath);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j.at("type") == "step") out.steps.push_back(j);
    }
  }
  world().barrier();
  return out;
}

TEST(OverlapJobs, SameBitsWithOverlapOnAndOff) {
  for (const std::string reduction : {"exact", "fp32"}) {
    for (int perProcess : {1, 2}) {
      const JobRun on = train(reduction, perProcess, true);
      const JobRun off = train(reduction, perProcess, false);
      ASSERT_EQ(on.sha.size(), 64u);
      EXPECT_EQ(on.sha, off.sha) << reduction << ", " << perProcess << " ESTs per process";
      EXPECT_EQ(on.replays, off.replays);
      if (reduction == "exact") {
        EXPECT_GE(on.replays, 1);  // the first step's
      }
    }
  }
}

TEST(OverlapJobs, BucketsStartWhileBackwardRuns) {
  const JobRun on = train("exact", 2, true);
  const JobRun off = train("exact", 2, false);
  if (world().rank() != 0) return;
  ASSERT_EQ(on.steps.size(), 4u);
  for (const auto& s : on.steps) {
    const int buckets = s.at("overlap_buckets");
    const int during = s.at("overlap_buckets_during_backward");
    EXPECT_GT(buckets, 1);
    // Every bucket but the one holding the first layers' parameters is complete before
    // backward reaches the first layer.
    EXPECT_GE(during, buckets - 1) << s.dump();
    EXPECT_GT(double(s.at("overlap_lead_s")), 0.0) << s.dump();
  }
  for (const auto& s : off.steps) EXPECT_FALSE(s.contains("overlap_buckets")) << s.dump();
}

}  // namespace
}  // namespace tl::est
