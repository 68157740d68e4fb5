#include "dataload/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "common/check.h"

namespace tl::data {

DistributedSampler::DistributedSampler(const SamplerOptions& options) : options_(options) {
  const int64_t n = options.datasetSize;
  const int64_t replicas = options.numReplicas;
  TL_REQUIRE(n > 0, "sampler: the dataset is empty (size ", n, ")");
  TL_REQUIRE(replicas >= 1, "sampler: number of replicas must be at least 1, got ", replicas);
  TL_REQUIRE(options.rank >= 0 && options.rank < replicas, "sampler: rank ", options.rank,
             " is outside 0..", replicas - 1);
  // PyTorch: with drop_last and a size that does not divide, num_samples =
  // ceil((n - R) / R) = floor(n / R); otherwise ceil(n / R).
  if (options.dropLast && n % replicas != 0) {
    numSamples_ = n / replicas;
  } else {
    numSamples_ = (n + replicas - 1) / replicas;
  }
  TL_REQUIRE(numSamples_ > 0, "sampler: with drop_last, a dataset of ", n, " samples gives ",
             replicas, " replicas no samples each");
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  const int64_t n = options_.datasetSize;
  const int64_t replicas = options_.numReplicas;
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (options_.shuffle) {
    // Python: g = torch.Generator(); g.manual_seed(seed + epoch); torch.randperm(n, generator=g)
    at::Generator generator =
        at::make_generator<at::CPUGeneratorImpl>(options_.seed + uint64_t(epoch));
    at::Tensor permutation = at::randperm(n, generator, at::TensorOptions().dtype(at::kLong));
    const int64_t* values = permutation.data_ptr<int64_t>();
    std::copy(values, values + n, order.begin());
  } else {
    for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  }
  // Position p of the padded (or truncated) list is order[p % n]: padding repeats the list from
  // its start as often as needed. Rank r takes positions r, r + R, r + 2R, ...
  std::vector<int64_t> shard(static_cast<size_t>(numSamples_));
  for (int64_t i = 0; i < numSamples_; ++i) {
    shard[size_t(i)] = order[size_t((options_.rank + i * replicas) % n)];
  }
  return shard;
}

BatchStream::BatchStream(const DistributedSampler& sampler, int64_t batchSize, bool dropLastBatch,
                         ShardCursor start)
    : sampler_(sampler), batchSize_(batchSize), dropLastBatch_(dropLastBatch), cursor_(start) {
  TL_REQUIRE(batchSize_ >= 1, "batch size must be at least 1, got ", batchSize_);
  TL_REQUIRE(batchesPerEpoch() > 0, "batch size ", batchSize_, " exceeds the ",
             sampler_.numSamples(), " samples of each replica's shard, and the last short batch ",
             "is dropped: an epoch would have no batches");
  TL_REQUIRE(start.epoch >= 0, "data cursor epoch must not be negative, got ", start.epoch);
  TL_REQUIRE(start.position >= 0 && start.position <= sampler_.numSamples(),
             "data cursor position ", start.position, " is outside the shard's ",
             sampler_.numSamples(), " samples");
  normalize();
}

int64_t BatchStream::batchesPerEpoch() const {
  const int64_t samples = sampler_.numSamples();
  return dropLastBatch_ ? samples / batchSize_ : (samples + batchSize_ - 1) / batchSize_;
}

int64_t BatchStream::epochEnd() const {
  return dropLastBatch_ ? batchesPerEpoch() * batchSize_ : sampler_.numSamples();
}

void BatchStream::normalize() {
  // A cursor at (or, with a dropped tail, past) the end of an epoch means the next one's start;
  // storing it that way gives one canonical cursor per stream position.
  if (cursor_.position >= epochEnd()) {
    ++cursor_.epoch;
    cursor_.position = 0;
  }
}

BatchRequest BatchStream::next() {
  if (cachedEpoch_ != cursor_.epoch) {
    cachedIndices_ = sampler_.indices(cursor_.epoch);
    cachedEpoch_ = cursor_.epoch;
  }
  const int64_t end = std::min(cursor_.position + batchSize_, epochEnd());
  BatchRequest request;
  request.epoch = cursor_.epoch;
  request.indices.assign(cachedIndices_.begin() + cursor_.position, cachedIndices_.begin() + end);
  cursor_.position = end;
  normalize();
  return request;
}

}  // namespace tl::data
