// Array datasets through the loader: batches as tensors of the samples' dtype and shape, with
// the same bytes whatever the loader threads, over DistributedSampler shards of tokens windows.
#include <gtest/gtest.h>

#include <cstring>

#include "common/files.h"
#include "dataload/array_dataset.h"
#include "dataload/loader.h"
#include "dataload/synthetic_arrays.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::freshDir;

// Every batch of logical rank `rank` of 3 for two epochs, batch 4, loaded by `workers` threads.
std::vector<Batch> shardBatches(std::shared_ptr<const SampleSource> source, int rank, int workers) {
  auto stream = std::make_shared<BatchStream>(
      DistributedSampler(SamplerOptions{source->size(), 3, rank, 11, true, false}), 4, false);
  const int64_t total = 2 * stream->batchesPerEpoch();
  auto served = std::make_shared<int64_t>(0);
  Loader::Plan plan = [stream, served, total]() -> std::optional<BatchRequest> {
    if ((*served)++ == total) return std::nullopt;
    return stream->next();
  };
  LoaderOptions options;
  options.workers = workers;
  options.samplesPerTask = 1;
  Loader loader(source, plan, options);
  std::vector<Batch> out;
  while (auto b = loader.next()) out.push_back(std::move(*b));
  return out;
}

bool sameBytes(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), size_t(a.nbytes())) == 0;
}

TEST(ArrayLoader, TokenBatchesAreInt64WindowsWhateverTheThreads) {
  const std::string dir = freshDir("tokens");
  SyntheticTokensOptions w;
  w.trainTokens = 400;
  w.valTokens = 20;
  w.vocab = 50;
  writeSyntheticTokens(w, dir);
  ArrayDatasetOptions o;
  o.seqLen = 9;
  std::shared_ptr<const SampleSource> source = openArrayDataset("tokens", dir, Split::Train, o);
  ASSERT_EQ(source->size(), 44);
  for (int rank = 0; rank < 3; ++rank) {
    const std::vector<Batch> sync = shardBatches(source, rank, 0);
    const std::vector<Batch> threaded = shardBatches(source, rank, 3);
    ASSERT_EQ(sync.size(), threaded.size());
    ASSERT_EQ(sync.size(), 8u) << "15 samples per rank: 3 full batches and a short one, twice";
    for (size_t b = 0; b < sync.size(); ++b) {
      const Batch& batch = sync[b];
      ASSERT_EQ(batch.images.scalar_type(), at::kLong);
      ASSERT_EQ(batch.images.size(1), 9);
      ASSERT_EQ(batch.labels.sizes(), batch.images.sizes());
      EXPECT_TRUE(sameBytes(batch.images, threaded[b].images)) << "rank " << rank << " batch " << b;
      EXPECT_TRUE(sameBytes(batch.labels, threaded[b].labels)) << "rank " << rank << " batch " << b;
      // Targets are the inputs shifted by one token, and the window is the sample's own.
      const auto* in = batch.images.data_ptr<int64_t>();
      const auto* next = batch.labels.data_ptr<int64_t>();
      for (int64_t i = 0; i < batch.images.size(0); ++i) {
        for (int64_t t = 0; t + 1 < 9; ++t) ASSERT_EQ(next[i * 9 + t], in[i * 9 + t + 1]);
        std::vector<uint8_t> want(9 * 8), wantNext(9 * 8), scratch;
        source->loadSample(batch.request.epoch, batch.request.indices[size_t(i)], want.data(),
                           wantNext.data(), scratch);
        ASSERT_EQ(std::memcmp(in + i * 9, want.data(), want.size()), 0);
      }
    }
  }
}

TEST(ArrayLoader, TensorBatchesKeepTheFilesDtype) {
  const std::string dir = freshDir("tensors");
  SyntheticTensorsOptions w;
  w.trainSamples = 30;
  w.testSamples = 3;
  w.shape = {3, 4, 4};
  writeSyntheticTensors(w, dir);
  std::shared_ptr<const SampleSource> source = openArrayDataset("tensors", dir, Split::Train, {});
  const std::vector<Batch> sync = shardBatches(source, 1, 0);
  const std::vector<Batch> threaded = shardBatches(source, 1, 2);
  ASSERT_EQ(sync.size(), threaded.size());
  for (size_t b = 0; b < sync.size(); ++b) {
    EXPECT_EQ(sync[b].images.scalar_type(), at::kFloat);
    EXPECT_EQ(sync[b].images.dim(), 4);
    EXPECT_EQ(sync[b].labels.scalar_type(), at::kLong);
    EXPECT_EQ(sync[b].labels.dim(), 1);
    EXPECT_TRUE(sameBytes(sync[b].images, threaded[b].images));
    EXPECT_TRUE(sameBytes(sync[b].labels, threaded[b].labels));
  }
}

}  // namespace
}  // namespace tl::data
