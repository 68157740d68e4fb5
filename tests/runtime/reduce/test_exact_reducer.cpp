// The exact reducer in one process: the scale protocol (first-step and misfit replays), errors,
// checkpointed state, memory, accuracy. Placement independence across processes is in
// test_exact_placement.cpp.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <cfloat>
#include <cmath>
#include <random>

#include "common/check.h"
#include "runtime/reduce/gradient_reducer.h"
#include "tests/runtime/reduce/reduce_test_support.h"

namespace tl::reduce {
namespace {

using testing::Layout;
using testing::SingleProcessComm;
using testing::SyntheticJob;

std::unique_ptr<GradientReducer> exactFor(comm::Communicator& comm, const SyntheticJob& job,
                                          int64_t bucketBytes = 25 << 20) {
  return createExactReducer(comm, job.params(), job.names(), bucketBytes);
}

// One step with one value per worker in a single one-element tensor.
bool stepWith(GradientReducer& r, const std::vector<float>& values, at::Tensor& out) {
  r.beginStep();
  for (float v : values) r.addContribution({at::full({1}, v, at::kFloat)});
  std::vector<at::Tensor> outs = {out};
  return r.finish(outs, int64_t(values.size()));
}

TEST(ExactReducer, FirstStepReplaysAndLeavesOutputUntouched) {
  SingleProcessComm comm;
  auto r = createExactReducer(comm, {at::zeros({1})}, {"w"}, 1 << 20);
  EXPECT_EQ(r->mode(), "exact");
  at::Tensor out = at::full({1}, 42.0f);
  EXPECT_FALSE(stepWith(*r, {1.0f, 2.0f}, out));
  EXPECT_EQ(out.item<float>(), 42.0f);
  EXPECT_EQ(r->replays(), 1);
  EXPECT_TRUE(stepWith(*r, {1.0f, 2.0f}, out));
  EXPECT_EQ(out.item<float>(), 1.5f);
  EXPECT_EQ(r->replays(), 1);
}

TEST(ExactReducer, MeanOfGridValuesIsTheExactMeanRoundedOnce) {
  // Values on the scale's grid quantise exactly, so the result must be the correctly rounded
  // rational mean; 1/3-style means make every rounding matter.
  SingleProcessComm comm;
  auto r = createExactReducer(comm, {at::zeros({1})}, {"w"}, 1 << 20);
  at::Tensor out = at::zeros({1});
  const std::vector<std::vector<float>> cases = {
      {1.0f, 1.0f, 2.0f}, {1.0f, 0.0f, 0.0f}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f},
      {3.0f, -1.0f, 0.0078125f}, {16777215.0f, 1.0f, 1.0f}, {-0.75f, -0.5f, 0.25f, 1e-3f, 7.0f}};
  for (const auto& values : cases) {
    if (!stepWith(*r, values, out)) {
      ASSERT_TRUE(stepWith(*r, values, out));
    }
    long double sum = 0;
    for (float v : values) sum += v;  // exact: few values of nearby exponents
    const long double mean = sum / values.size();
    // Correct rounding, checked against both float neighbours of the result.
    const float got = out.item<float>();
    const long double error = std::fabs((long double)got - mean);
    EXPECT_LE(error, std::fabs((long double)std::nextafter(got, INFINITY) - mean));
    EXPECT_LE(error, std::fabs((long double)std::nextafter(got, -INFINITY) - mean));
  }
}

TEST(ExactReducer, NonFiniteGradientNamesTheParameter) {
  SingleProcessComm comm;
  auto r = createExactReducer(comm, {at::zeros({3}), at::zeros({2, 2})},
                              {"fc.bias", "layer1.0.conv1.weight"}, 1 << 20);
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    r->beginStep();
    at::Tensor g = at::ones({2, 2});
    g[1][0] = bad;
    try {
      r->addContribution({at::ones({3}), g});
      ADD_FAILURE() << "no error for " << bad;
    } catch (const Error& e) {
      const std::string expected = std::string("non-finite gradient (") +
                                   (std::isnan(bad) ? "NaN" : "Inf") +
                                   ") in parameter 'layer1.0.conv1.weight'";
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
}

TEST(ExactReducer, ReplaysWhenGradientsOutgrowTheHeadroomOrShrinkTooFar) {
  SingleProcessComm comm;
  auto r = createExactReducer(comm, {at::zeros({1})}, {"w"}, 1 << 20);
  at::Tensor out = at::zeros({1});
  EXPECT_FALSE(stepWith(*r, {1.0f, 1.0f}, out));  // first step
  EXPECT_TRUE(stepWith(*r, {1.0f, 1.0f}, out));
  EXPECT_TRUE(stepWith(*r, {200.0f, 1.0f}, out));  // < 2^8: within the headroom
  EXPECT_EQ(r->replays(), 1);
  EXPECT_FALSE(stepWith(*r, {1.0f, 1e6f}, out));   // 5000x: overflow
  EXPECT_EQ(out.item<float>(), 100.5f);            // untouched by the failed attempt
  EXPECT_TRUE(stepWith(*r, {1.0f, 1e6f}, out));
  EXPECT_EQ(out.item<float>(), 500000.5f);
  EXPECT_FALSE(stepWith(*r, {1e-2f, 0.0f}, out));  // 1e8 smaller: too coarse
  EXPECT_TRUE(stepWith(*r, {1e-2f, 0.0f}, out));
  EXPECT_EQ(out.item<float>(), 5e-3f);
  EXPECT_EQ(r->replays(), 3);
}

TEST(ExactReducer, RecomputationsThatKeepChangingAreReported) {
  SingleProcessComm comm;
  auto r = createExactReducer(comm, {at::zeros({1})}, {"w"}, 1 << 20);
  at::Tensor out = at::zeros({1});
  float g = 1.0f;
  try {
    for (int attempt = 0; attempt < 10; ++attempt, g *= 1e4f) {
      ASSERT_FALSE(stepWith(*r, {g}, out)) << "attempt " << attempt;
    }
    ADD_FAILURE() << "endless replays";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be bit-identical"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r->replays(), 4);
}

TEST(ExactReducer, AllZeroTensorKeepsAScaleAndGivesZeros) {
  SingleProcessComm comm;
  SyntheticJob job;
  job.workers = 3;
  auto r = exactFor(comm, job);
  auto result = testing::runJob(*r, job, testing::allWorkers(job.workers), Layout::Contiguous, true);
  EXPECT_EQ(result.replays, SyntheticJob::kExpectedReplays);
  for (const auto& step : result.outputs) EXPECT_TRUE(step[1].eq(0).all().item<bool>());
  auto state = r->state();
  EXPECT_EQ(state[0].first, "exponents");
  EXPECT_EQ(state[0].second[1].item<int64_t>(), 51 - 8 - 1);  // as for max |g| = 1
}

TEST(ExactReducer, LocalOrderBucketingAndMemoryLayoutDoNotChangeBits) {
  SingleProcessComm comm;
  SyntheticJob job;
  job.workers = 5;
  auto reference = testing::runJob(*exactFor(comm, job), job, {0, 1, 2, 3, 4});
  EXPECT_EQ(testing::runJob(*exactFor(comm, job, 4096), job, {4, 2, 0, 3, 1}).sha256, reference.sha256);
  EXPECT_EQ(testing::runJob(*exactFor(comm, job, 1), job, {3, 1, 4, 0, 2}, Layout::Strided).sha256,
            reference.sha256);
}

// The batched path that device tensors take (fixed_point.h), run on the CPU: the loops' bits
// and replays for every bucketing and layout, with the last contribution of each step streamed
// tensor by tensor in some rounds.
TEST(ExactReducer, BatchedPathGivesTheLoopsBits) {
  SingleProcessComm comm;
  SyntheticJob job;
  job.workers = 5;
  const auto reference = testing::runJob(*exactFor(comm, job), job, {0, 1, 2, 3, 4});
  EXPECT_EQ(reference.replays, SyntheticJob::kExpectedReplays);
  for (int64_t bucketBytes : {int64_t(1), int64_t(4096), int64_t(25) << 20}) {
    for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
      auto batched = createExactReducer(comm, job.params(), job.names(), bucketBytes,
                                        ExactCollectives::ReduceScatter, ExactKernels::Batched);
      const auto got = testing::runJob(*batched, job, {4, 2, 0, 3, 1}, layout);
      EXPECT_EQ(got.sha256, reference.sha256) << "bucket bytes " << bucketBytes;
      EXPECT_EQ(got.replays, reference.replays) << "bucket bytes " << bucketBytes;
    }
  }
  // Streamed: the last local contribution arrives tensor by tensor, backward's order; small
  // buckets (4096 bytes) so that most are complete before the contribution ends.
  auto streamed = createExactReducer(comm, job.params(), job.names(), 4096, ExactCollectives::ReduceScatter,
                                     ExactKernels::Batched);
  Sha256 hash;
  for (int step = 0; step < job.steps; ++step) {
    std::vector<at::Tensor> out = job.params();
    for (int attempt = 0;; ++attempt) {
      ASSERT_LT(attempt, 3);
      streamed->beginStep();
      for (int w = 0; w < 4; ++w) streamed->addContribution(job.gradients(step, w));
      const auto last = job.gradients(step, 4);
      streamed->streamContribution();
      // On odd steps some tensors never stream (unused parameters): their buckets stay
      // incomplete until addContribution.
      for (size_t t = last.size(); t-- > 0;)
        if (step % 2 == 0 || t % 3 != 1) streamed->addGradient(t, last[t]);
      streamed->addContribution(last);
      if (streamed->finish(out, job.workers)) break;
    }
    for (const auto& o : out) hash.update(o.data_ptr(), size_t(o.numel()) * sizeof(float));
  }
  EXPECT_EQ(hash.hexDigest(), reference.sha256);
}

// On the batched path the maxima stay on the device until finish: a non-finite gradient is
// reported there, by every process, naming the parameter.
TEST(ExactReducer, BatchedPathNamesANonFiniteGradientAtFinish) {
  SingleProcessComm comm;
  auto r = createExactReducer(comm, {at::zeros({3}), at::zeros({2, 2})}, {"fc.bias", "layer1.0.conv1.weight"},
                              1 << 20, ExactCollectives::ReduceScatter, ExactKernels::Batched);
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    r->beginStep();
    at::Tensor g = at::ones({2, 2});
    g[1][0] = bad;
    r->addContribution({at::ones({3}), g});
    std::vector<at::Tensor> out = {at::zeros({3}), at::zeros({2, 2})};
    try {
      r->finish(out, 1);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const Error& e) {
      const std::string expected = std::string("non-finite gradient (") + (std::isnan(bad) ? "NaN" : "Inf") +
                                   ") in parameter 'layer1.0.conv1.weight'";
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
}

TEST(ExactReducer, StateRoundTripGivesIdenticalLaterSteps) {
  SingleProcessComm comm;
  SyntheticJob first, second;
  first.steps = 3;  // through the overflow at step 2
  second.steps = 3;
  second.seed = 99;
  auto a = exactFor(comm, first);
  testing::runJob(*a, first, testing::allWorkers(4));
  auto b = exactFor(comm, first);
  b->loadState(a->state());
  const auto fromA = testing::runJob(*a, second, testing::allWorkers(4));
  const auto fromB = testing::runJob(*b, second, testing::allWorkers(4));
  EXPECT_EQ(fromA.sha256, fromB.sha256);
  EXPECT_EQ(b->replays(), fromA.replays);  // restored scales: no first-step replay
  EXPECT_EQ(fromB.replays, fromA.replays);
}

TEST(ExactReducer, LoadStateRejectsMismatchedState) {
  SingleProcessComm comm;
  SyntheticJob job;
  auto r = exactFor(comm, job);
  auto good = r->state();
  auto expectRejected = [&](std::vector<std::pair<std::string, at::Tensor>> state, const std::string& what) {
    try {
      r->loadState(state);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  auto shorter = good;
  shorter[0].second = shorter[0].second.narrow(0, 0, 3);
  expectRejected(shorter, "'exponents' must be a Long tensor of shape [7]");
  auto wrongType = good;
  wrongType[1].second = wrongType[1].second.to(at::kFloat);
  expectRejected(wrongType, "'max_abs' must be a Double tensor");
  expectRejected({good[0], good[1]}, "'scales_known' is missing");
  auto extra = good;
  extra.push_back({"bucket_sums", at::zeros({1})});
  expectRejected(extra, "unexpected entry 'bucket_sums'");
  auto hugeExponent = good;
  hugeExponent[0].second = hugeExponent[0].second.clone().fill_(5000);
  expectRejected(hugeExponent, "'exponents'[0] = 5000 is outside");
  auto negativeMax = good;
  negativeMax[1].second = negativeMax[1].second.clone().fill_(-1.0);
  expectRejected(negativeMax, "'max_abs'[0] = -1 is not a finite magnitude");
}

size_t heapBytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// A job on one process starts no collective, exact or fp32, streamed or not: its buckets and
// maxima are the job's already, and on a GPU each collective would make the host wait for the
// device in the middle of a step. The bits are the multi-process ones (test_exact_placement's
// np1 against np2-4).
TEST(ExactReducer, OneProcessStartsNoCollective) {
  SyntheticJob job;
  for (const bool exact : {true, false}) {
    SingleProcessComm comm;
    auto r =
        exact ? exactFor(comm, job, 64 << 10) : createFp32Reducer(comm, job.params(), 64 << 10);
    const testing::RunResult result = testing::runJob(*r, job, testing::allWorkers(job.workers));
    EXPECT_EQ(result.replays, exact ? SyntheticJob::kExpectedReplays : 0);
    // A streamed last contribution, as --overlap hands it over.
    std::vector<at::Tensor> out;
    for (const auto& s : job.shapes) out.push_back(at::zeros(s));
    r->beginStep();
    for (int w = 0; w + 1 < job.workers; ++w) r->addContribution(job.gradients(0, w));
    r->streamContribution();
    const auto last = job.gradients(0, int(job.workers) - 1);
    for (size_t t = last.size(); t-- > 0;) r->addGradient(t, last[t]);
    r->addContribution(last);
    r->finish(out, job.workers);
    EXPECT_EQ(comm.allreduces, 0) << (exact ? "exact" : "fp32");
  }
}

TEST(ExactReducer, MemoryDoesNotGrowWithTheNumberOfContributions) {
  SingleProcessComm comm;
  const int64_t elements = 1 << 20;  // 4 MiB of gradient: a copy per contribution would show
  auto r = createExactReducer(comm, {at::zeros({elements})}, {"w"}, 25 << 20);
  at::Tensor g = at::randn({elements});
  std::vector<at::Tensor> out = {at::zeros({elements})};
  for (int attempt = 0; attempt < 2; ++attempt) {  // the first step replays
    r->beginStep();
    r->addContribution({g});
    r->finish(out, 1);
  }
  r->beginStep();
  r->addContribution({g});
  const size_t afterOne = heapBytesInUse();
  for (int c = 1; c < 64; ++c) {
    g.mul_(0.99f);
    r->addContribution({g});
  }
  const size_t afterMany = heapBytesInUse();
  EXPECT_LT(afterMany, afterOne + (1 << 20)) << "64 contributions of 4 MiB grew the heap by "
                                             << (afterMany - afterOne) << " bytes";
  EXPECT_TRUE(r->finish(out, 64));
}

TEST(ExactReducer, AtLeastAsAccurateAsAnFp32Sum) {
  SingleProcessComm comm;
  SyntheticJob job;
  job.workers = 8;
  job.steps = 2;
  auto exact = exactFor(comm, job);
  auto fp32 = createFp32Reducer(comm, job.params(), 25 << 20);
  const auto all = testing::allWorkers(job.workers);
  const auto e = testing::runJob(*exact, job, all, Layout::Contiguous, true).outputs.back();
  const auto f = testing::runJob(*fp32, job, all, Layout::Contiguous, true).outputs.back();
  const auto exponents = exact->state()[0].second;
  for (size_t t = 0; t < job.shapes.size(); ++t) {
    const int64_t numel = e[t].numel();
    std::vector<long double> sum(size_t(numel), 0.0L);
    for (int w = 0; w < job.workers; ++w) {
      at::Tensor g = job.gradients(job.steps - 1, w)[t];
      for (int64_t i = 0; i < g.numel(); ++i) sum[i] += g.data_ptr<float>()[i];
    }
    long double exactError = 0, fp32Error = 0;
    // Quantisation error of the mean is at most half a unit of the scale.
    const long double unit = std::ldexp(1.0L, -int(exponents[t].item<int64_t>()));
    for (int64_t i = 0; i < numel; ++i) {
      const long double mean = sum[i] / job.workers;
      const float nearest = float(mean);
      const long double halfUlp =
          std::max(std::nextafter(nearest, INFINITY) - nearest, nearest - std::nextafter(nearest, -INFINITY)) / 2.0L;
      const long double errE = std::fabs(e[t].data_ptr<float>()[i] - mean);
      ASSERT_LE(errE, halfUlp + unit / 2 + unit * 1e-3L) << "tensor " << t << " element " << i;
      exactError += errE;
      fp32Error += std::fabs(f[t].data_ptr<float>()[i] - mean);
    }
    EXPECT_LE(exactError, fp32Error) << "tensor " << t;
    std::printf("tensor %zu: summed |error| exact %.3Le, fp32 %.3Le\n", t, exactError, fp32Error);
  }
}

}  // namespace
}  // namespace tl::reduce
