// The dataset cache (--cache-mb): the budget is never exceeded, even with loader threads racing
// and the budget changing live; admitted samples stay, so a data set larger than the budget
// hits the same share every epoch; and a batch's bytes are the same with and without a cache,
// through live resizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <numeric>
#include <random>
#include <thread>

#include "dataload/image_folder.h"
#include "dataload/loader.h"
#include "dataload/resized_crop.h"
#include "dataload/sample_cache.h"
#include "dataload/synthetic_jpeg.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::freshDir;
using testing::inputErrorOf;

// Sample i: sizeOf(i) bytes of value (i * 7 + j) & 255, so a wrong copy shows.
std::vector<uint8_t> sampleBytes(int64_t i, int64_t size) {
  std::vector<uint8_t> out(static_cast<size_t>(size));
  for (int64_t j = 0; j < size; ++j) out[size_t(j)] = uint8_t((i * 7 + j) & 255);
  return out;
}

int64_t sizeOf(int64_t i) { return 50 + (i * 37) % 200; }

// One epoch over samples 0..n-1 in `order` through the cache as a dataset would use it.
void readThrough(SampleCache& cache, const std::vector<int64_t>& order) {
  std::vector<uint8_t> got;
  for (int64_t i : order) {
    if (cache.fetch(i, got)) {
      ASSERT_EQ(got, sampleBytes(i, sizeOf(i))) << "sample " << i;
    } else {
      const std::vector<uint8_t> bytes = sampleBytes(i, sizeOf(i));
      cache.offer(i, bytes.data(), int64_t(bytes.size()));
    }
  }
}

TEST(SampleCache, BudgetNeverExceededWithThreadsRacingAndTheBudgetChanging) {
  const int64_t n = 2000;
  SampleCache cache(n, 40'000);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> overBudget{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t));
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      for (int epoch = 0; epoch < 3; ++epoch) {
        std::shuffle(order.begin(), order.end(), rng);
        readThrough(cache, order);
      }
    });
  }
  // The budget moves between 5 kB and 60 kB while the readers run; after every change the
  // used bytes fit the new budget.
  std::thread resizer([&] {
    std::mt19937_64 rng(99);
    while (!stop.load()) {
      const int64_t budget = 5'000 + int64_t(rng() % 55'000);
      cache.setBudget(budget);
      const SampleCacheStats s = cache.stats();
      if (s.usedBytes > s.budgetBytes) overBudget.fetch_add(1);
      std::this_thread::yield();
    }
  });
  for (auto& r : readers) r.join();
  stop = true;
  resizer.join();
  EXPECT_EQ(overBudget.load(), 0);
  cache.setBudget(20'000);
  const SampleCacheStats s = cache.stats();
  EXPECT_LE(s.usedBytes, 20'000);
  EXPECT_LE(s.peakUsedBytes, 60'000);
  EXPECT_EQ(s.hits + s.misses, 3 * 4 * n);
  EXPECT_GT(s.hits, 0);
  // The bytes cached are exactly the admitted samples' bytes plus their overhead.
  int64_t cachedBytes = 0, cachedSamples = 0;
  std::vector<uint8_t> got;
  for (int64_t i = 0; i < n; ++i) {
    if (cache.fetch(i, got)) {
      EXPECT_EQ(got, sampleBytes(i, sizeOf(i)));
      cachedBytes += int64_t(got.size()) + SampleCache::kEntryOverhead;
      ++cachedSamples;
    }
  }
  EXPECT_EQ(cachedSamples, cache.stats().cachedSamples);
  EXPECT_EQ(cachedBytes, cache.stats().usedBytes);
}

TEST(SampleCache, AdmittedSamplesStaySoALargerDataSetDoesNotThrash) {
  const int64_t n = 1000;
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) total += sizeOf(i) + SampleCache::kEntryOverhead;
  SampleCache cache(n, total * 2 / 3);  // the data set is 1.5x the budget
  std::mt19937_64 rng(5);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  readThrough(cache, order);
  const SampleCacheStats first = cache.stats();
  EXPECT_EQ(first.hits, 0);
  EXPECT_EQ(first.misses, n);
  EXPECT_GT(first.cachedSamples, n / 2);
  EXPECT_LE(first.usedBytes, total * 2 / 3);
  for (int epoch = 1; epoch < 4; ++epoch) {
    const SampleCacheStats before = cache.stats();
    std::shuffle(order.begin(), order.end(), rng);
    readThrough(cache, order);
    const SampleCacheStats e = cache.stats() - before;
    // Every cached sample hits every epoch, whatever the order; only the rest is read.
    EXPECT_EQ(e.hits, first.cachedSamples) << "epoch " << epoch;
    EXPECT_EQ(e.misses, n - first.cachedSamples);
    EXPECT_EQ(e.bytesFromCache + e.bytesFromStorage,
              total - n * SampleCache::kEntryOverhead);
    EXPECT_EQ(e.cachedSamples, first.cachedSamples) << "nothing evicted, nothing more admitted";
  }
}

TEST(SampleCache, ShrinkingEvictsTheLatestAdmittedAndGrowingAdmitsAgain) {
  SampleCache cache(10, 10 * (100 + SampleCache::kEntryOverhead));
  std::vector<uint8_t> bytes(100, 1), got;
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_FALSE(cache.fetch(i, got));
    cache.offer(i, bytes.data(), 100);
  }
  EXPECT_EQ(cache.stats().cachedSamples, 10);
  cache.setBudget(4 * (100 + SampleCache::kEntryOverhead) + 50);
  EXPECT_EQ(cache.stats().cachedSamples, 4);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(cache.fetch(i, got), i < 4) << "sample " << i;
  cache.setBudget(0);
  EXPECT_EQ(cache.stats().usedBytes, 0);
  EXPECT_FALSE(cache.fetch(0, got));
  cache.offer(0, bytes.data(), 100);
  EXPECT_EQ(cache.stats().cachedSamples, 0) << "a zero budget admits nothing";
  cache.setBudget(1 << 20);
  cache.offer(7, bytes.data(), 100);
  EXPECT_TRUE(cache.fetch(7, got));
}

TEST(SampleCache, MissesCountTheirReadTimeAndEpochDifferencesSubtractIt) {
  SampleCache cache(4, 0);
  std::vector<uint8_t> bytes(100, 1);
  cache.offer(0, bytes.data(), 100, 0.25);
  const SampleCacheStats first = cache.stats();
  cache.offer(1, bytes.data(), 100, 0.5);
  cache.offer(2, bytes.data(), 100);  // no time measured
  EXPECT_NEAR(first.storageSeconds, 0.25, 1e-9);
  EXPECT_NEAR(cache.stats().storageSeconds, 0.75, 1e-9);
  EXPECT_NEAR((cache.stats() - first).storageSeconds, 0.5, 1e-9);
  EXPECT_EQ((cache.stats() - first).bytesFromStorage, 200);
}

TEST(SampleCache, NegativeBudgetIsAnInputError) {
  EXPECT_NE(inputErrorOf([] { SampleCache(10, -1); }).find("cache budget"), std::string::npos);
  SampleCache cache(10, 0);
  EXPECT_NE(inputErrorOf([&] { cache.setBudget(-5); }).find("got -5"), std::string::npos);
}

// The next epoch of `stream` through RandomResizedCrop with 2 loader threads, appended to
// `out`; `afterBatch` runs after each batch is taken, while the threads keep loading. The loader
// is gone when this returns, so cache statistics read then belong to whole epochs.
void loadEpoch(std::shared_ptr<const SamplePipeline> pipeline, std::shared_ptr<BatchStream> stream,
               std::vector<std::vector<float>>& out,
               const std::function<void(size_t)>& afterBatch = {}) {
  auto served = std::make_shared<int64_t>(0);
  const int64_t batches = stream->batchesPerEpoch();
  Loader loader(pipeline,
                [stream, served, batches]() -> std::optional<BatchRequest> {
                  if (*served == batches) return std::nullopt;
                  ++*served;
                  return stream->next();
                },
                LoaderOptions{2, 2, 2});
  size_t taken = 0;
  while (auto batch = loader.next()) {
    const float* data = batch->images.data_ptr<float>();
    out.emplace_back(data, data + batch->images.numel());
    if (afterBatch) afterBatch(++taken);
  }
}

std::shared_ptr<BatchStream> shuffledStream(const Dataset& dataset) {
  return std::make_shared<BatchStream>(
      DistributedSampler(SamplerOptions{dataset.size(), 1, 0, 3, true, false}), 6, false);
}

TEST(SampleCache, SameBatchBytesWithAndWithoutTheCacheThroughLiveResizes) {
  const std::string dir = freshDir("data");
  SyntheticJpegOptions synth;
  synth.classes = 3;
  synth.trainImages = 36;
  synth.valImages = 3;
  writeSyntheticImageFolder(synth, dir);
  ResizedCropOptions crop;
  crop.size = 16;
  std::shared_ptr<const Transform> transform = makeResizedCrop(crop);
  auto plain = std::make_shared<ImageFolderDataset>(dir, Split::Train, DatasetOptions{});
  std::vector<std::vector<float>> reference;
  {
    auto pipeline = std::make_shared<const SamplePipeline>(plain, transform, 11);
    auto stream = shuffledStream(*plain);
    for (int epoch = 0; epoch < 3; ++epoch) loadEpoch(pipeline, stream, reference);
  }
  ASSERT_EQ(reference.size(), 18u);  // 36 samples in batches of 6, three epochs
  int64_t folderBytes = 0;
  for (int64_t i = 0; i < plain->size(); ++i) {
    folderBytes += int64_t(std::filesystem::file_size(plain->path(i)));
  }

  DatasetOptions cached;
  cached.cacheBytes = folderBytes * 2 / 3;  // the folder is 1.5x the budget
  auto dataset = std::make_shared<ImageFolderDataset>(dir, Split::Train, cached);
  SampleCache& cache = *dataset->sampleCache();
  auto pipeline = std::make_shared<const SamplePipeline>(dataset, transform, 11);
  auto stream = shuffledStream(*dataset);
  std::vector<std::vector<float>> got;
  std::vector<SampleCacheStats> atEpochEnd;
  loadEpoch(pipeline, stream, got);
  atEpochEnd.push_back(cache.stats());
  // Epoch 1: the budget shrinks to a quarter after its 2nd batch and grows to twice the folder
  // after its 4th, while the two loader threads keep reading.
  loadEpoch(pipeline, stream, got, [&](size_t taken) {
    if (taken == 2) cache.setBudget(folderBytes / 4);
    if (taken == 4) cache.setBudget(folderBytes * 2);
    EXPECT_LE(cache.stats().usedBytes, cache.stats().budgetBytes);
  });
  atEpochEnd.push_back(cache.stats());
  loadEpoch(pipeline, stream, got);
  atEpochEnd.push_back(cache.stats());
  ASSERT_EQ(got.size(), reference.size());
  for (size_t b = 0; b < got.size(); ++b) {
    ASSERT_EQ(got[b].size(), reference[b].size());
    EXPECT_EQ(std::memcmp(got[b].data(), reference[b].data(), got[b].size() * sizeof(float)), 0)
        << "batch " << b;
  }
  ASSERT_EQ(atEpochEnd.size(), 3u);
  const SampleCacheStats epoch0 = atEpochEnd[0];
  EXPECT_EQ(epoch0.hits, 0);
  EXPECT_EQ(epoch0.misses, 36);
  EXPECT_EQ(epoch0.bytesFromStorage, folderBytes);
  EXPECT_LE(epoch0.peakUsedBytes, folderBytes * 2 / 3);
  // Epoch 2 hits exactly what epoch 1 left cached, reads the rest from storage, and admits it
  // all (the budget is now twice the folder).
  const SampleCacheStats epoch2 = atEpochEnd[2] - atEpochEnd[1];
  EXPECT_GT(atEpochEnd[1].cachedSamples, 0);
  EXPECT_EQ(epoch2.hits, atEpochEnd[1].cachedSamples);
  EXPECT_EQ(epoch2.hits + epoch2.misses, 36);
  EXPECT_EQ(epoch2.bytesFromCache + epoch2.bytesFromStorage, folderBytes);
  EXPECT_EQ(atEpochEnd[2].cachedSamples, 36);
}

}  // namespace
}  // namespace tl::data
