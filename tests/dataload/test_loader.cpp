// Loader: plan order, identical bytes whatever the pool does, errors, shutdown, stats.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "dataload/loader.h"
#include "dataload/memory_dataset.h"
#include "dataload/transforms.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::inputErrorOf;

std::shared_ptr<const InMemoryDataset> randomCifarLike(int64_t count) {
  SampleRng rng(2024, 0, 0);
  std::vector<uint8_t> pixels(size_t(count * 3072));
  for (auto& byte : pixels) byte = uint8_t(rng.nextU32());
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < count; ++i) labels.push_back(i % 10);
  return std::make_shared<InMemoryDataset>("random", ImageShape{3, 32, 32}, 10, pixels, labels);
}

std::shared_ptr<const SamplePipeline> pipelineFor(std::shared_ptr<const Dataset> dataset) {
  return std::make_shared<SamplePipeline>(dataset, makeCropFlipNormalize(cifarAugmentation()), 9);
}

// The first `batches` batches of replica 1 of 3 over `n` samples, batch size 7 (epochs of
// 34 samples: four full batches and a short one).
Loader::Plan streamPlan(int64_t n, int64_t batches) {
  auto stream = std::make_shared<BatchStream>(
      DistributedSampler(SamplerOptions{n, 3, 1, 4, true, false}), 7, false);
  auto served = std::make_shared<int64_t>(0);
  return [stream, served, batches]() -> std::optional<BatchRequest> {
    if (*served == batches) return std::nullopt;
    ++*served;
    BatchRequest request = stream->next();
    request.tag = *served;
    return request;
  };
}

struct Collected {
  std::vector<std::vector<float>> images;
  std::vector<std::vector<int64_t>> labels;
  std::vector<int64_t> tags;
};

void append(Collected& out, const Batch& batch) {
  ASSERT_EQ(batch.images.scalar_type(), at::kFloat);
  ASSERT_EQ(batch.labels.scalar_type(), at::kLong);
  ASSERT_EQ(batch.images.dim(), 4);
  ASSERT_EQ(batch.images.size(0), int64_t(batch.request.indices.size()));
  ASSERT_TRUE(batch.images.is_contiguous());
  const float* images = batch.images.data_ptr<float>();
  const int64_t* labels = batch.labels.data_ptr<int64_t>();
  out.images.emplace_back(images, images + batch.images.numel());
  out.labels.emplace_back(labels, labels + batch.labels.numel());
  out.tags.push_back(batch.request.tag);
}

// What the batches must hold: each sample loaded on its own, straight from the pipeline.
Collected expectedBatches(const SamplePipeline& pipeline, Loader::Plan plan) {
  Collected out;
  std::vector<uint8_t> scratch;
  const int64_t floats = pipeline.outputShape().numel();
  while (auto request = plan()) {
    std::vector<float> images(request->indices.size() * size_t(floats));
    std::vector<int64_t> labels;
    for (size_t i = 0; i < request->indices.size(); ++i) {
      labels.push_back(pipeline.load(request->epoch, request->indices[i], images.data() + i * floats, scratch));
    }
    out.images.push_back(images);
    out.labels.push_back(labels);
    out.tags.push_back(request->tag);
  }
  return out;
}

void expectSame(const Collected& got, const Collected& expected, const std::string& what) {
  ASSERT_EQ(got.tags, expected.tags) << what;
  for (size_t b = 0; b < expected.images.size(); ++b) {
    ASSERT_EQ(got.labels[b], expected.labels[b]) << what << ", batch " << b;
    ASSERT_EQ(got.images[b].size(), expected.images[b].size()) << what << ", batch " << b;
    ASSERT_EQ(std::memcmp(got.images[b].data(), expected.images[b].data(),
                          expected.images[b].size() * sizeof(float)), 0)
        << what << ", batch " << b;
  }
}

constexpr int64_t kSamples = 100;
constexpr int64_t kBatches = 23;  // more than four epochs of the shard

TEST(Loader, SameBatchesInPlanOrderForAnyNumberOfWorkers) {
  auto pipeline = pipelineFor(randomCifarLike(kSamples));
  const Collected expected = expectedBatches(*pipeline, streamPlan(kSamples, kBatches));
  for (int workers : {0, 1, 2, 4}) {
    for (int samplesPerTask : {1, 3, 8}) {
      Loader loader(pipeline, streamPlan(kSamples, kBatches), LoaderOptions{workers, 2, samplesPerTask});
      Collected got;
      while (auto batch = loader.next()) append(got, *batch);
      EXPECT_FALSE(loader.next().has_value());  // stays ended
      expectSame(got, expected, "workers " + std::to_string(workers) + ", samples per task " +
                                    std::to_string(samplesPerTask));
      LoaderStats stats = loader.stats();
      EXPECT_EQ(stats.batches, kBatches);
      EXPECT_EQ(stats.workers, workers);
      int64_t images = 0;
      for (const auto& labels : expected.labels) images += int64_t(labels.size());
      EXPECT_EQ(stats.images, images);
      EXPECT_GT(stats.workerBusySeconds, 0.0);
      EXPECT_GE(stats.waitSeconds, 0.0);
    }
  }
}

TEST(Loader, ResizingThePoolMidStreamKeepsEveryByte) {
  auto pipeline = pipelineFor(randomCifarLike(kSamples));
  const Collected expected = expectedBatches(*pipeline, streamPlan(kSamples, kBatches));
  Loader loader(pipeline, streamPlan(kSamples, kBatches), LoaderOptions{1, 1, 2});
  // Before each batch, the pool size to switch to: growing, shrinking, to and from zero.
  const std::vector<int> schedule = {1, 2, 4, 4, 0, 0, 3, 1, 0, 2, 2, 4, 1, 1, 0, 4, 2, 0, 1, 3, 3, 0, 2};
  Collected got;
  for (size_t b = 0; b < schedule.size(); ++b) {
    loader.setWorkers(schedule[b]);
    EXPECT_EQ(loader.workers(), schedule[b]);
    auto batch = loader.next();
    ASSERT_TRUE(batch.has_value()) << "batch " << b;
    append(got, *batch);
  }
  EXPECT_FALSE(loader.next().has_value());
  expectSame(got, expected, "resized pool");
}

// A dataset whose image `bad` cannot be decoded.
class FailingDataset : public Dataset {
 public:
  FailingDataset(std::shared_ptr<const Dataset> inner, int64_t bad) : inner_(std::move(inner)), bad_(bad) {}
  std::string describe() const override { return "failing"; }
  int64_t size() const override { return inner_->size(); }
  int numClasses() const override { return inner_->numClasses(); }
  int64_t label(int64_t index) const override { return inner_->label(index); }
  ImageShape imageShape() const override { return inner_->imageShape(); }
  ImageView image(int64_t index, std::vector<uint8_t>& scratch) const override {
    if (index == bad_) inputError("cannot decode image ", index, " of 'photos/0037.jpg'");
    return inner_->image(index, scratch);
  }

 private:
  std::shared_ptr<const Dataset> inner_;
  int64_t bad_;
};

// Batches [0..9], [10..19], ... in order, `count` of them.
Loader::Plan sequentialPlan(int64_t count) {
  auto next = std::make_shared<int64_t>(0);
  return [next, count]() -> std::optional<BatchRequest> {
    if (*next == count) return std::nullopt;
    BatchRequest request;
    for (int64_t i = 0; i < 10; ++i) request.indices.push_back(*next * 10 + i);
    request.tag = (*next)++;
    return request;
  };
}

TEST(Loader, WorkerErrorReachesNextAsTheSameErrorAfterTheGoodBatches) {
  auto dataset = std::make_shared<FailingDataset>(randomCifarLike(kSamples), 37);
  for (int workers : {0, 1, 2, 4}) {
    Loader loader(pipelineFor(dataset), sequentialPlan(10), LoaderOptions{workers, 2, 3});
    for (int64_t b = 0; b < 3; ++b) {
      auto batch = loader.next();
      ASSERT_TRUE(batch.has_value());
      EXPECT_EQ(batch->request.tag, b);
    }
    std::string first = inputErrorOf([&] { loader.next(); });
    EXPECT_EQ(first, "cannot decode image 37 of 'photos/0037.jpg'") << "workers " << workers;
    EXPECT_EQ(inputErrorOf([&] { loader.next(); }), first);  // sticky
    loader.setWorkers(2);  // resizing after a failure neither hangs nor clears it
    EXPECT_EQ(inputErrorOf([&] { loader.next(); }), first);
  }
}

TEST(Loader, PlanErrorEndsTheStreamAfterTheBatchesBeforeIt) {
  for (int workers : {0, 2}) {
    auto inner = sequentialPlan(10);
    int calls = 0;
    Loader::Plan plan = [inner, &calls]() -> std::optional<BatchRequest> {
      if (++calls == 3) inputError("the data cursor of worker 2 is corrupt");
      return inner();
    };
    Loader loader(pipelineFor(randomCifarLike(kSamples)), plan, LoaderOptions{workers, 2, 4});
    EXPECT_TRUE(loader.next().has_value());
    EXPECT_TRUE(loader.next().has_value());
    EXPECT_EQ(inputErrorOf([&] { loader.next(); }), "the data cursor of worker 2 is corrupt");
    EXPECT_EQ(inputErrorOf([&] { loader.next(); }), "the data cursor of worker 2 is corrupt");
  }
}

TEST(Loader, StopsCleanlyWhereverTheConsumerStops) {
  auto pipeline = pipelineFor(randomCifarLike(kSamples));
  auto endless = [] {
    auto stream = std::make_shared<BatchStream>(DistributedSampler(SamplerOptions{kSamples, 1, 0, 0, true, false}), 16, false);
    return [stream]() -> std::optional<BatchRequest> { return stream->next(); };
  };
  { Loader neverRead(pipeline, endless(), LoaderOptions{4, 4, 8}); }
  {
    Loader readOnce(pipeline, endless(), LoaderOptions{3, 2, 8});
    EXPECT_TRUE(readOnce.next().has_value());
  }
  {
    Loader shrunk(pipeline, endless(), LoaderOptions{2, 2, 8});
    shrunk.next();
    shrunk.setWorkers(0);
    EXPECT_TRUE(shrunk.next().has_value());
  }
  Loader emptyPlan(pipeline, [] { return std::optional<BatchRequest>(); }, LoaderOptions{2, 2, 8});
  EXPECT_FALSE(emptyPlan.next().has_value());
}

TEST(Loader, EmptyRequestGivesAnEmptyBatch) {
  bool served = false;
  Loader::Plan plan = [&served]() -> std::optional<BatchRequest> {
    if (served) return std::nullopt;
    served = true;
    return BatchRequest{};
  };
  Loader loader(pipelineFor(randomCifarLike(4)), plan, LoaderOptions{1, 2, 8});
  auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->images.sizes(), (std::vector<int64_t>{0, 3, 32, 32}));
  EXPECT_EQ(batch->labels.numel(), 0);
  EXPECT_FALSE(loader.next().has_value());
}

// A dataset that takes `delay` per image: the consumer must wait, and prefetch is bounded.
class SlowDataset : public FailingDataset {
 public:
  SlowDataset(std::shared_ptr<const Dataset> inner, std::chrono::milliseconds delay)
      : FailingDataset(std::move(inner), -1), delay_(delay) {}
  ImageView image(int64_t index, std::vector<uint8_t>& scratch) const override {
    std::this_thread::sleep_for(delay_);
    return FailingDataset::image(index, scratch);
  }

 private:
  std::chrono::milliseconds delay_;
};

TEST(Loader, PrefetchIsBoundedAndWaitingIsMeasured) {
  auto dataset = std::make_shared<SlowDataset>(randomCifarLike(kSamples), std::chrono::milliseconds(2));
  std::atomic<int> planCalls{0};
  auto inner = sequentialPlan(10);
  Loader::Plan plan = [&planCalls, inner] {
    ++planCalls;
    return inner();
  };
  Loader loader(pipelineFor(dataset), plan, LoaderOptions{1, 2, 4});
  // One worker, prefetch 2: it starts two batches, and no third one while nobody consumes,
  // however long it is left alone.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (planCalls.load() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(planCalls.load(), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // time for both and more
  EXPECT_EQ(planCalls.load(), 2);
  ASSERT_TRUE(loader.next().has_value());
  loader.setWorkers(0);
  const double waitedBefore = loader.stats().waitSeconds;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(loader.next().has_value());
  // The rest of batch 3 (at least 6 images: the retired worker finished one task of 4) and
  // all of batch 4 load on this thread, at 2 ms per image; batch 2 was prefetched.
  EXPECT_GT(loader.stats().waitSeconds - waitedBefore, 0.025);
  EXPECT_GT(loader.stats().workerBusySeconds, 0.07);
}

TEST(Loader, BadOptionsAreInputErrors) {
  auto pipeline = pipelineFor(randomCifarLike(4));
  expectContains(inputErrorOf([&] { Loader(pipeline, sequentialPlan(0), LoaderOptions{-1, 2, 8}); }),
                 {"workers", "-1"});
  expectContains(inputErrorOf([&] { Loader(pipeline, sequentialPlan(0), LoaderOptions{1, 0, 8}); }),
                 {"prefetch", "got 0"});
  expectContains(inputErrorOf([&] { Loader(pipeline, sequentialPlan(0), LoaderOptions{1, 2, 0}); }),
                 {"samples per task", "got 0"});
  Loader loader(pipeline, sequentialPlan(0), LoaderOptions{1, 2, 8});
  expectContains(inputErrorOf([&] { loader.setWorkers(-3); }), {"workers", "-3"});
}

}  // namespace
}  // namespace tl::data
