// DistributedSampler against PyTorch's definition and printed lists, and BatchStream cursors.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "dataload/sampler.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::inputErrorOf;

// torch.utils.data.DistributedSampler.__iter__ (PyTorch 1.13), transcribed line by line.
std::vector<int64_t> pytorchIndices(int64_t n, int64_t replicas, int64_t rank, uint64_t seed,
                                    int64_t epoch, bool shuffle, bool dropLast) {
  int64_t numSamples;
  if (dropLast && n % replicas != 0) {
    numSamples = int64_t(std::ceil(double(n - replicas) / double(replicas)));
  } else {
    numSamples = int64_t(std::ceil(double(n) / double(replicas)));
  }
  const int64_t totalSize = numSamples * replicas;
  std::vector<int64_t> indices;
  if (shuffle) {
    at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed + uint64_t(epoch));
    at::Tensor perm = at::randperm(n, g, at::TensorOptions().dtype(at::kLong));
    indices.assign(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + n);
  } else {
    for (int64_t i = 0; i < n; ++i) indices.push_back(i);
  }
  if (!dropLast) {
    const int64_t padding = totalSize - int64_t(indices.size());
    if (padding <= int64_t(indices.size())) {
      indices.insert(indices.end(), indices.begin(), indices.begin() + padding);
    } else {
      // (indices * ceil(padding / len))[:padding]
      std::vector<int64_t> repeated;
      const int64_t times = int64_t(std::ceil(double(padding) / double(indices.size())));
      for (int64_t t = 0; t < times; ++t) repeated.insert(repeated.end(), indices.begin(), indices.end());
      indices.insert(indices.end(), repeated.begin(), repeated.begin() + padding);
    }
  } else {
    indices.resize(size_t(totalSize));
  }
  std::vector<int64_t> shard;
  for (int64_t i = rank; i < totalSize; i += replicas) shard.push_back(indices[size_t(i)]);
  return shard;
}

std::vector<int64_t> ourIndices(int64_t n, int replicas, int rank, uint64_t seed, int64_t epoch,
                                bool shuffle, bool dropLast) {
  SamplerOptions options{n, replicas, rank, seed, shuffle, dropLast};
  return DistributedSampler(options).indices(epoch);
}

TEST(DistributedSampler, MatchesPyTorchDefinitionOverManyConfigurations) {
  int checked = 0;
  for (int64_t n : {1, 2, 3, 7, 10, 64, 100, 1001}) {
    for (int replicas : {1, 2, 3, 4, 8, 13}) {
      for (bool dropLast : {false, true}) {
        if (dropLast && n < replicas) continue;  // every replica would get nothing
        for (bool shuffle : {true, false}) {
          for (uint64_t seed : {0, 5}) {
            for (int64_t epoch : {0, 1, 9}) {
              for (int rank = 0; rank < replicas; ++rank) {
                ASSERT_EQ(ourIndices(n, replicas, rank, seed, epoch, shuffle, dropLast),
                          pytorchIndices(n, replicas, rank, seed, epoch, shuffle, dropLast))
                    << "n " << n << " R " << replicas << " rank " << rank << " seed " << seed
                    << " epoch " << epoch << " shuffle " << shuffle << " drop " << dropLast;
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// Lists printed by PyTorch 1.13 (/usr/bin/python3):
//   s = torch.utils.data.DistributedSampler(range(n), num_replicas=R, rank=r, seed=S,
//                                           shuffle=..., drop_last=...)
//   s.set_epoch(E); print(list(s))
TEST(DistributedSampler, MatchesListsPrintedByPyTorch) {
  struct Case {
    int64_t n;
    int replicas, rank;
    uint64_t seed;
    int64_t epoch;
    bool shuffle, dropLast;
    std::vector<int64_t> expected;
  };
  const std::vector<Case> cases = {
      {10, 3, 1, 5, 2, true, false, {0, 1, 6, 5}},
      {10, 3, 0, 5, 2, true, true, {5, 4, 9}},
      {10, 3, 2, 5, 2, true, true, {3, 7, 8}},
      {5, 4, 3, 0, 0, true, false, {3, 1}},
      {3, 8, 5, 7, 1, true, false, {2}},
      {3, 8, 6, 7, 1, true, false, {0}},  // padding repeats the list more than once
      {10, 4, 3, 0, 0, false, false, {3, 7, 1}},
      {10, 4, 3, 0, 0, false, true, {3, 7}},
      {7, 2, 0, 42, 3, true, false, {5, 1, 4, 0}},
      {50, 3, 2, 123, 4, true, false, {4, 42, 21, 33, 3, 20, 29, 12, 30, 40, 14, 45, 25, 5, 2, 37, 35}},
      {50, 3, 2, 123, 4, true, true, {4, 42, 21, 33, 3, 20, 29, 12, 30, 40, 14, 45, 25, 5, 2, 37}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ourIndices(c.n, c.replicas, c.rank, c.seed, c.epoch, c.shuffle, c.dropLast), c.expected)
        << "n " << c.n << " R " << c.replicas << " rank " << c.rank;
  }
}

TEST(DistributedSampler, ShardsPartitionTheEpoch) {
  // Without padding (n divisible by R) the shards are disjoint and cover the dataset.
  std::vector<int64_t> all;
  for (int rank = 0; rank < 4; ++rank) {
    auto shard = ourIndices(100, 4, rank, 3, 1, true, false);
    EXPECT_EQ(shard.size(), 25u);
    all.insert(all.end(), shard.begin(), shard.end());
  }
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(all[size_t(i)], i);
  // Epochs differ, and the sampler is a pure function of (options, epoch).
  EXPECT_NE(ourIndices(100, 4, 0, 3, 1, true, false), ourIndices(100, 4, 0, 3, 2, true, false));
  EXPECT_EQ(ourIndices(100, 4, 0, 3, 1, true, false), ourIndices(100, 4, 0, 3, 1, true, false));
}

TEST(DistributedSampler, BadOptionsAreInputErrors) {
  auto make = [](int64_t n, int replicas, int rank, bool dropLast) {
    DistributedSampler(SamplerOptions{n, replicas, rank, 0, true, dropLast});
  };
  expectContains(inputErrorOf([&] { make(0, 1, 0, false); }), {"dataset is empty"});
  expectContains(inputErrorOf([&] { make(10, 0, 0, false); }), {"at least 1", "got 0"});
  expectContains(inputErrorOf([&] { make(10, 4, 4, false); }), {"rank 4", "0..3"});
  expectContains(inputErrorOf([&] { make(10, 4, -1, false); }), {"rank -1"});
  expectContains(inputErrorOf([&] { make(3, 8, 0, true); }), {"3 samples", "8 replicas"});
  EXPECT_EQ(DistributedSampler(SamplerOptions{3, 8, 0, 0, true, false}).numSamples(), 1);
  EXPECT_EQ(DistributedSampler(SamplerOptions{10, 4, 0, 0, true, true}).numSamples(), 2);
  EXPECT_EQ(DistributedSampler(SamplerOptions{10, 4, 0, 0, true, false}).numSamples(), 3);
}

DistributedSampler sampler(int64_t n, int replicas, int rank) {
  return DistributedSampler(SamplerOptions{n, replicas, rank, 11, true, false});
}

TEST(BatchStream, WalksTheShardInBatchesAcrossEpochs) {
  DistributedSampler s = sampler(23, 2, 1);  // 12 samples per replica
  BatchStream stream(s, 5, false);
  EXPECT_EQ(stream.batchesPerEpoch(), 3);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> walked;
    for (int b = 0; b < 3; ++b) {
      BatchRequest r = stream.next();
      EXPECT_EQ(r.epoch, epoch);
      EXPECT_EQ(r.indices.size(), b < 2 ? 5u : 2u);
      walked.insert(walked.end(), r.indices.begin(), r.indices.end());
    }
    EXPECT_EQ(walked, s.indices(epoch));
    EXPECT_EQ(stream.cursor(), (ShardCursor{epoch + 1, 0}));
  }
}

TEST(BatchStream, DropLastBatchSkipsTheShortTail) {
  DistributedSampler s = sampler(23, 2, 0);
  BatchStream stream(s, 5, true);
  EXPECT_EQ(stream.batchesPerEpoch(), 2);
  const std::vector<int64_t> epoch0 = s.indices(0);
  EXPECT_EQ(stream.next().indices, std::vector<int64_t>(epoch0.begin(), epoch0.begin() + 5));
  EXPECT_EQ(stream.next().indices, std::vector<int64_t>(epoch0.begin() + 5, epoch0.begin() + 10));
  BatchRequest third = stream.next();
  EXPECT_EQ(third.epoch, 1);
  const std::vector<int64_t> epoch1 = s.indices(1);
  EXPECT_EQ(third.indices, std::vector<int64_t>(epoch1.begin(), epoch1.begin() + 5));
}

TEST(BatchStream, RestoredCursorContinuesWithTheSameBatches) {
  DistributedSampler s = sampler(1000, 3, 2);
  BatchStream original(s, 32, false);
  for (int i = 0; i < 7; ++i) original.next();  // mid-epoch 0
  const ShardCursor saved = original.cursor();
  EXPECT_EQ(saved, (ShardCursor{0, 7 * 32}));
  BatchStream restored(s, 32, false, saved);
  for (int i = 0; i < 40; ++i) {  // across two epoch boundaries (11 batches per epoch)
    BatchRequest a = original.next(), b = restored.next();
    ASSERT_EQ(a.epoch, b.epoch) << "batch " << i;
    ASSERT_EQ(a.indices, b.indices) << "batch " << i;
    ASSERT_EQ(original.cursor(), restored.cursor());
  }
  // A cursor at the very end of an epoch is the start of the next one.
  BatchStream atEnd(s, 32, false, ShardCursor{4, s.numSamples()});
  EXPECT_EQ(atEnd.cursor(), (ShardCursor{5, 0}));
  // A position that is not a multiple of the batch size (the batch size changed) resumes there.
  BatchStream odd(s, 32, false, ShardCursor{2, 5});
  const std::vector<int64_t> epoch2 = s.indices(2);
  EXPECT_EQ(odd.next().indices, std::vector<int64_t>(epoch2.begin() + 5, epoch2.begin() + 37));
}

TEST(BatchStream, BadOptionsAreInputErrors) {
  DistributedSampler s = sampler(10, 2, 0);  // 5 per replica
  expectContains(inputErrorOf([&] { BatchStream(s, 0, false); }), {"batch size", "got 0"});
  expectContains(inputErrorOf([&] { BatchStream(s, 6, true); }), {"batch size 6", "5 samples"});
  EXPECT_NO_THROW(BatchStream(s, 6, false));
  expectContains(inputErrorOf([&] { BatchStream(s, 2, false, ShardCursor{0, 6}); }),
                 {"position 6", "5 samples"});
  expectContains(inputErrorOf([&] { BatchStream(s, 2, false, ShardCursor{-1, 0}); }),
                 {"epoch", "-1"});
}

}  // namespace
}  // namespace tl::data
