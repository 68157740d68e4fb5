// The data side of a process's ESTs. EST r reads exactly the shard a DDP rank r would read
// (DistributedSampler over the N logical ranks). One loader serves the local ESTs interleaved in
// EST order, planned ahead from each EST's cursor; a second stream per EST advances only as
// batches are consumed, and its cursor is the one the EST's context (and a checkpoint) keeps.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dataload/loader.h"
#include "dataload/sampler.h"
#include "est/est_context.h"
#include "runtime/job_config.h"

namespace tl::est {

// The batches of logical rank `logicalRank` out of `logicalWorkers`, from `cursor` on.
data::BatchStream shardStream(const JobConfig& config, int64_t datasetSize, int logicalWorkers,
                              int logicalRank, data::ShardCursor cursor = {});

class LocalBatches {
 public:
  // Plans batches for `local` (in logical-rank order) from their cursors for the steps from
  // `stepsDone` up to `totalSteps`.
  LocalBatches(const JobConfig& config, std::shared_ptr<const data::SampleSource> source,
               const std::vector<EstContext>& local, int logicalWorkers, int64_t stepsDone,
               int64_t totalSteps);

  // EST fiber: the next batch of local EST `i`; moves `context.cursor` past it.
  data::Batch next(int i, EstContext& context);

  data::Loader& loader() { return *loader_; }

 private:
  struct Plan;
  std::shared_ptr<Plan> plan_;
  std::vector<data::BatchStream> consumed_;
  std::unique_ptr<data::Loader> loader_;
};

}  // namespace tl::est
