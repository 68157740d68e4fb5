#include "launcher/loader_tuning.h"

#include <unistd.h>

#include <filesystem>

#include "common/files.h"
#include "dataload/tuning/unix_socket.h"

namespace tl::launcher {

std::string executableDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::unique_ptr<CoordinatorTuner> connectToCoordinator(const JobConfig& job, const std::string& runDir,
                                                       int rank) {
  tuning::CoordinatorClientOptions o;
  o.runDir = runDir.empty() ? tuning::defaultRunDir() : runDir;
  // Unique on the node: the output folder's name (if any) plus this process's pid and rank.
  std::string name = job.outputDir.empty() ? "job" : std::filesystem::path(job.outputDir).filename().string();
  if (name.empty()) name = "job";
  o.jobId = name + "-" + std::to_string(::getpid()) + "/" + std::to_string(rank);
  o.computeThreads = job.computeThreads;
  o.initialWorkers = std::max(1, job.workers);
  o.minWorkers = 1;
  o.maxWorkers = 16;
  o.coordinatorBinary = joinPath(executableDir(), "tl-coordinator");
  auto tuner = std::make_unique<CoordinatorTuner>(o);
  tuner->connect();
  return tuner;
}

}  // namespace tl::launcher
