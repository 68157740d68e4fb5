#include "est/local_batches.h"

#include "common/check.h"

namespace tl::est {

data::BatchStream shardStream(const JobConfig& config, int64_t datasetSize, int logicalWorkers,
                              int logicalRank, data::ShardCursor cursor) {
  data::SamplerOptions so;
  so.datasetSize = datasetSize;
  so.numReplicas = logicalWorkers;
  so.rank = logicalRank;
  so.seed = config.seed;
  return data::BatchStream(data::DistributedSampler(so), config.batch, config.dropLastBatch, cursor);
}

// What the loader's threads read ahead: one stream per local EST, taken in turn.
struct LocalBatches::Plan {
  std::vector<data::BatchStream> streams;
  std::vector<int> ranks;
  size_t next = 0;
  int64_t stepsPlanned = 0;
  int64_t totalSteps = 0;

  std::optional<data::BatchRequest> operator()() {
    if (streams.empty() || stepsPlanned >= totalSteps) return std::nullopt;
    data::BatchRequest r = streams[next].next();
    r.tag = ranks[next];
    if (++next == streams.size()) {
      next = 0;
      ++stepsPlanned;
    }
    return r;
  }
};

LocalBatches::LocalBatches(const JobConfig& config, std::shared_ptr<const data::SampleSource> source,
                           const std::vector<EstContext>& local, int logicalWorkers, int64_t stepsDone,
                           int64_t totalSteps)
    : plan_(std::make_shared<Plan>()) {
  const int64_t datasetSize = source->size();
  for (const auto& c : local) {
    plan_->streams.push_back(shardStream(config, datasetSize, logicalWorkers, c.logicalRank, c.cursor));
    plan_->ranks.push_back(c.logicalRank);
    consumed_.push_back(shardStream(config, datasetSize, logicalWorkers, c.logicalRank, c.cursor));
  }
  plan_->stepsPlanned = stepsDone;
  plan_->totalSteps = totalSteps;
  auto plan = plan_;
  loader_ = std::make_unique<data::Loader>(
      std::move(source), [plan]() { return (*plan)(); },
      data::LoaderOptions{config.workers, config.prefetch});
}

data::Batch LocalBatches::next(int i, EstContext& context) {
  std::optional<data::Batch> batch = loader_->next();
  TL_CHECK(batch.has_value(), "loader ran dry for EST ", context.logicalRank);
  TL_CHECK_EQ(batch->request.tag, int64_t(context.logicalRank), "batch handed to the wrong EST");
  consumed_[size_t(i)].next();
  context.cursor = consumed_[size_t(i)].cursor();
  return std::move(*batch);
}

}  // namespace tl::est
