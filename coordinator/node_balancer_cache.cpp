// NodeBalancer's cache memory: the jobs' measured memory sensitivity and the joint split of
// cores and cache (see node_balancer.h, "Cache memory").
#include <algorithm>
#include <cmath>
#include <sstream>

#include "dataload/sample_cache.h"
#include "coordinator/joint_allocator.h"
#include "coordinator/node_balancer.h"

namespace tl::coordinator {

int64_t NodeBalancer::cacheBudget() const {
  if (options_.cacheBytes > 0) return options_.cacheBytes;
  int64_t total = 0;
  for (const auto& [id, job] : jobs_) total += std::max<int64_t>(0, job.spec.cacheBytes);
  return total;
}

CacheProfile NodeBalancer::cacheProfile(const Job& job) const {
  CacheProfile p;
  if (job.spec.cacheBytes < 0 || job.storageBytes <= 0 || job.cacheSamples <= 0) return p;
  p.sampleBytes = job.cacheBytesServed / job.cacheSamples;
  p.datasetBytes = double(job.spec.samples) * (p.sampleBytes + double(data::SampleCache::kEntryOverhead));
  p.storageSecondsPerByte = job.storageSeconds / job.storageBytes;
  p.fittedMissShare = 0;  // report() took the reads out of the fitted windows
  return p;
}

bool NodeBalancer::jointSplit() const {
  for (const auto& [id, job] : jobs_) {
    if (!exploring(job) && job.fitter.ready() && cacheProfile(job).known()) return true;
  }
  return false;
}

Decision NodeBalancer::rebalanceJoint(Decision decision, bool apply, int cores,
                                      const std::string& why) {
  std::vector<std::string> ids;
  std::vector<JointDemand> demands;
  std::vector<int> currentWorkers;
  std::vector<int64_t> currentCache;
  int64_t held = 0;  // cache kept by jobs outside the split
  for (const auto& [id, job] : jobs_) {
    const bool inSplit = !exploring(job);
    const CacheProfile profile = cacheProfile(job);
    if (!inSplit || !profile.known()) held += std::max<int64_t>(0, job.cacheAssigned);
    if (!inSplit) continue;
    ids.push_back(id);
    ThroughputModel model = job.fitter.ready() ? job.fitter.fit() : ThroughputModel{0, 1, 0};
    demands.push_back({model, profile, job.spec.minWorkers, job.spec.maxWorkers});
    currentWorkers.push_back(job.assigned);
    currentCache.push_back(profile.known() ? std::max<int64_t>(0, job.cacheAssigned) : 0);
  }
  const JointBudget pool{cores, std::max<int64_t>(0, cacheBudget() - held), options_.cacheUnits};
  JointSplit proposal = allocateJoint(demands, pool);
  // Memory moves only when that pays: else the cores are split with every cache as it is
  // (a resize evicts what was read, so a move for no predicted gain would only cost).
  int64_t currentTotal = 0;
  for (int64_t bytes : currentCache) currentTotal += bytes;
  if (currentTotal <= pool.memoryBytes) {
    std::vector<JobDemand> fixedCache;
    for (size_t j = 0; j < demands.size(); ++j) {
      fixedCache.push_back({demands[j].cache.atBudget(demands[j].model, double(currentCache[j])),
                            demands[j].minWorkers, demands[j].maxWorkers});
    }
    const std::vector<int> workers = allocateGreedy(fixedCache, cores);
    const double keep = jointPredictedTotal(demands, workers, currentCache);
    if (!(proposal.predicted > keep * (1 + options_.minGain))) proposal = {workers, currentCache, keep};
  }

  long currentSum = 0, proposalSum = 0;
  int64_t currentMemory = 0;
  for (size_t j = 0; j < demands.size(); ++j) {
    currentSum += currentWorkers[j];
    proposalSum += proposal.workers[j];
    currentMemory += currentCache[j];
    if (currentWorkers[j] < demands[j].minWorkers || currentWorkers[j] > demands[j].maxWorkers)
      apply = true;
  }
  if (currentSum != proposalSum || currentMemory > pool.memoryBytes) apply = true;
  std::string gainText;
  if (!apply) {
    const double before = jointPredictedTotal(demands, currentWorkers, currentCache);
    const double after = proposal.predicted;
    apply = std::isfinite(after) && after > before * (1 + options_.minGain);
    std::ostringstream os;
    os.precision(4);
    os << " (predicted " << before << " -> " << after << " images/s, cores and cache)";
    gainText = os.str();
  }
  if (apply) {
    for (size_t j = 0; j < ids.size(); ++j) {
      Job& job = jobs_.at(ids[j]);
      if (proposal.workers[j] != job.assigned) {
        decision.changes[ids[j]] = proposal.workers[j];
        job.assigned = proposal.workers[j];
      }
      if (demands[j].cache.known() && proposal.cacheBytes[j] != job.cacheAssigned) {
        decision.cacheChanges[ids[j]] = proposal.cacheBytes[j];
        decision.changes[ids[j]] = job.assigned;
        job.cacheAssigned = proposal.cacheBytes[j];
      }
    }
  }
  if (!decision.changes.empty() || !decision.cacheChanges.empty() || apply) {
    decision.reason = why + gainText + ": " + describe();
  }
  return decision;
}

}  // namespace tl::coordinator
