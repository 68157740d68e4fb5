#include "launcher/loader_tuning.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/files.h"
#include "coordinator/unix_socket.h"

namespace tl::launcher {

std::string executableDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

CoordinatorTuner::CoordinatorTuner(coordinator::CoordinatorClientOptions options, data::SampleCache* cache)
    : client_(std::move(options)), cache_(cache) {
  if (cache_) lastCache_ = cache_->stats();
}

void CoordinatorTuner::report(const coordinator::LoaderObservation& loader,
                              const coordinator::ComputeObservation& compute, double waitSeconds) {
  coordinator::CacheObservation window;
  if (cache_) {
    const data::SampleCacheStats now = cache_->stats();
    const data::SampleCacheStats d = now - lastCache_;
    lastCache_ = now;
    window = {d.hits, d.misses, d.bytesFromCache, d.bytesFromStorage, std::max(0.0, d.storageSeconds),
              now.budgetBytes};
  }
  client_.report(loader, compute, waitSeconds, window);
}

std::optional<int> CoordinatorTuner::pendingWorkers() {
  if (auto bytes = client_.pendingCacheBytes(); bytes && cache_) {
    cache_->setBudget(*bytes);
    spdlog::info("dataset cache resized by the node coordinator to {:.2f} MiB", double(*bytes) / 1048576.0);
  }
  return client_.pendingWorkers();
}

std::unique_ptr<CoordinatorTuner> connectToCoordinator(const JobConfig& job, const std::string& runDir,
                                                       int rank, data::SampleCache* cache) {
  coordinator::CoordinatorClientOptions o;
  o.runDir = runDir.empty() ? coordinator::defaultRunDir() : runDir;
  // Unique on the node: the output folder's name (if any) plus this process's pid and rank.
  std::string name = job.outputDir.empty() ? "job" : std::filesystem::path(job.outputDir).filename().string();
  if (name.empty()) name = "job";
  o.jobId = name + "-" + std::to_string(::getpid()) + "/" + std::to_string(rank);
  o.computeThreads = job.computeThreads;
  o.initialWorkers = std::max(1, job.workers);
  o.minWorkers = 1;
  o.maxWorkers = 16;
  o.coordinatorBinary = joinPath(executableDir(), "tl-coordinator");
  if (cache) {
    o.cacheBytes = cache->stats().budgetBytes;
    o.cacheSamples = cache->samples();
  }
  auto tuner = std::make_unique<CoordinatorTuner>(o, cache);
  tuner->connect();
  return tuner;
}

}  // namespace tl::launcher
