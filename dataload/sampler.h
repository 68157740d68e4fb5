// PyTorch DistributedSampler semantics over logical ranks, and a resumable batch stream.
#pragma once

#include <cstdint>
#include <vector>

namespace tl::data {

struct SamplerOptions {
  int64_t datasetSize = 0;
  int numReplicas = 1;  // logical ranks (N)
  int rank = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  bool dropLast = false;  // false: pad by repeating from the start, as PyTorch does
};

// Same index lists as torch.utils.data.DistributedSampler: randperm with a generator seeded
// with seed + epoch (libtorch's own randperm), pad or drop to a multiple of numReplicas,
// then indices[rank::numReplicas]. InputError on bad options: empty dataset, fewer than one
// replica, rank outside 0..R-1, or drop_last leaving a replica no samples.
class DistributedSampler {
 public:
  explicit DistributedSampler(const SamplerOptions& options);  // InputError on bad options
  int64_t numSamples() const { return numSamples_; }  // per replica per epoch
  std::vector<int64_t> indices(int64_t epoch) const;
  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  int64_t numSamples_ = 0;
};

// Where a replica is in its data: the epoch and how many of that epoch's samples it consumed.
struct ShardCursor {
  int64_t epoch = 0;
  int64_t position = 0;
  bool operator==(const ShardCursor& o) const { return epoch == o.epoch && position == o.position; }
};

struct BatchRequest {
  int64_t epoch = 0;
  std::vector<int64_t> indices;  // dataset indices, in batch order
  int64_t tag = 0;               // free for the caller (e.g. which logical worker asked)
};

// Walks one replica's shard batch by batch, across epoch boundaries, as a DataLoader over the
// sampler would (batch size B; the last short batch kept unless dropLastBatch).
// cursor() is canonical: after the last batch of epoch e it reads (e + 1, 0). A stream built
// from a saved cursor continues with exactly the batches the saved stream would have given.
// InputError when the batch size is 0, an epoch would hold no batch, or the cursor lies
// outside the shard.
class BatchStream {
 public:
  BatchStream(const DistributedSampler& sampler, int64_t batchSize, bool dropLastBatch,
              ShardCursor start = {});
  BatchRequest next();
  ShardCursor cursor() const { return cursor_; }
  int64_t batchesPerEpoch() const;

 private:
  int64_t epochEnd() const;  // samples of the shard one epoch consumes
  void normalize();
  DistributedSampler sampler_;
  int64_t batchSize_;
  bool dropLastBatch_;
  ShardCursor cursor_;
  int64_t cachedEpoch_ = -1;
  std::vector<int64_t> cachedIndices_;
};

}  // namespace tl::data
