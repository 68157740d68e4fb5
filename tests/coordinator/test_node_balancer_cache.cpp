// The coordinator's policy with dataset caches: jobs that differ only in how slowly they read
// from storage get different cache budgets, the split never exceeds the node's cache memory,
// and a job without a cache is left out of the memory split.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "dataload/sample_cache.h"
#include "coordinator/node_balancer.h"

namespace tl::coordinator {
namespace {

// A job that loads like `model` when every sample is cached, and whose misses each read
// `sampleBytes` at `secondsPerByte`; its cache admits never-evict (miss share 1 - budget / D).
struct CachedJob {
  ThroughputModel model;
  int64_t samples = 100;
  double sampleBytes = 1e5;
  double secondsPerByte = 0;
  int workers = 1;
  int64_t cacheBytes = 0;
  bool hasCache = true;

  double datasetBytes() const {
    return double(samples) * (sampleBytes + double(data::SampleCache::kEntryOverhead));
  }
  ReportMessage window(double seconds) const {
    const double miss = std::clamp(1 - double(cacheBytes) / datasetBytes(), 0.0, 1.0);
    const double perImage = model.a * workers + model.b + miss * sampleBytes * secondsPerByte;
    const double rate = std::min(model.computeRate, workers / perImage);
    ReportMessage r;
    r.loader.workers = workers;
    r.loader.images = std::llround(rate * seconds);
    r.loader.busySeconds = perImage * double(r.loader.images);
    r.compute.images = r.loader.images;
    r.compute.computeSeconds = double(r.compute.images) / model.computeRate;
    r.waitSeconds = std::max(0.0, seconds - r.compute.computeSeconds);
    r.cache.misses = std::llround(miss * double(r.loader.images));
    r.cache.hits = r.loader.images - r.cache.misses;
    r.cache.storageBytes = std::llround(double(r.cache.misses) * sampleBytes);
    r.cache.hitBytes = std::llround(double(r.cache.hits) * sampleBytes);
    r.cache.storageSeconds = double(r.cache.storageBytes) * secondsPerByte;
    r.cache.budgetBytes = cacheBytes;
    if (!hasCache) r.cache = {};
    return r;
  }
};

struct CacheNode {
  NodeBalancer balancer;
  std::map<std::string, CachedJob> jobs;
  int cacheMoves = 0;

  explicit CacheNode(BalancerOptions options) : balancer(options) {}
  void apply(const Decision& d) {
    for (auto& [id, w] : d.changes) jobs.at(id).workers = w;
    for (auto& [id, bytes] : d.cacheChanges) {
      EXPECT_TRUE(d.changes.count(id)) << "a cache change travels in an assign with the size";
      jobs.at(id).cacheBytes = bytes;
      ++cacheMoves;
    }
  }
  void add(const std::string& id, CachedJob job, bool withCache = true) {
    job.hasCache = withCache;
    jobs[id] = job;
    apply(balancer.addJob(id, {0, 1, 1, 4, 1, withCache ? job.cacheBytes : -1, job.samples}));
  }
  void rounds(int n) {
    for (int i = 0; i < n; ++i) {
      for (auto& [id, job] : jobs) {
        apply(balancer.report(id, job.window(1.0)));
      }
    }
  }
  int64_t cacheInUse() const {
    int64_t sum = 0;
    for (auto& [id, job] : jobs) sum += job.cacheBytes;
    return sum;
  }
};

BalancerOptions node(int cores) {
  BalancerOptions options;
  options.loaderCores = cores;
  return options;
}

TEST(NodeBalancerCache, TheJobThatReadsSlowlyGetsTheMemory) {
  CacheNode n(node(4));
  // Alike but for storage: 10 ms vs 0.1 ms per 100 kB sample; 6 MB of cache each at start,
  // so the node has 12 MB: enough for one 10 MB data set.
  n.add("fast", {{0, 0.005, 1e9}, 100, 1e5, 1e-9, 1, 6000000});
  n.add("slow", {{0, 0.005, 1e9}, 100, 1e5, 1e-7, 1, 6000000});
  EXPECT_EQ(n.balancer.cacheBudget(), 12000000);
  n.rounds(12);
  const CachedJob& slow = n.jobs.at("slow");
  const CachedJob& fast = n.jobs.at("fast");
  EXPECT_EQ(slow.cacheBytes, int64_t(std::ceil(slow.datasetBytes()))) << n.balancer.describe();
  EXPECT_LT(fast.cacheBytes, slow.cacheBytes);
  EXPECT_LE(n.cacheInUse(), 12000000);
  EXPECT_GT(n.cacheMoves, 0);
  EXPECT_EQ(slow.workers + fast.workers, 4);
  // The model the coordinator holds matches what the jobs do.
  for (const JobView& v : n.balancer.jobs()) {
    ASSERT_TRUE(v.cache.known()) << v.id;
    EXPECT_NEAR(v.model.b, 0.005, 5e-5) << v.id << ": reads taken out of the worker model";
    EXPECT_NEAR(v.cache.storageSecondsPerByte, n.jobs.at(v.id).secondsPerByte, 1e-12);
    EXPECT_NEAR(v.cache.sampleBytes, 1e5, 1);
  }
}

TEST(NodeBalancerCache, AFixedNodeBudgetIsNeverExceededAndJobsWithoutACacheGetNone) {
  BalancerOptions options = node(3);
  options.cacheBytes = 5000000;
  CacheNode n(options);
  n.add("a", {{0.001, 0.004, 400}, 100, 1e5, 5e-8, 1, 4000000});
  n.add("b", {{0, 0.003, 1e9}, 200, 5e4, 2e-8, 1, 4000000});
  n.add("plain", {{0, 0.004, 1e9}, 100, 1e5, 0, 1, 0}, /*withCache=*/false);
  n.rounds(12);
  EXPECT_LE(n.jobs.at("a").cacheBytes + n.jobs.at("b").cacheBytes, 5000000)
      << n.balancer.describe();
  EXPECT_EQ(n.jobs.at("plain").cacheBytes, 0);
  for (const JobView& v : n.balancer.jobs()) {
    if (v.id == "plain") {
      EXPECT_EQ(v.cacheBytes, -1);
    }
  }
}

TEST(NodeBalancerCache, InsensitiveJobsKeepTheirCaches) {
  // Compute-bound with any cache: no predicted gain, so nothing moves after exploring.
  CacheNode n(node(4));
  n.add("a", {{0, 0.001, 50}, 100, 1e5, 1e-9, 1, 3000000});
  n.add("b", {{0, 0.001, 50}, 100, 1e5, 1e-9, 1, 3000000});
  n.rounds(12);
  EXPECT_EQ(n.cacheMoves, 0) << n.balancer.describe();
}

}  // namespace
}  // namespace tl::coordinator
