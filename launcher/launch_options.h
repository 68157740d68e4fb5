// tl-launch's flags: how argv becomes a JobConfig.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "runtime/job_config.h"

namespace tl::launcher {

struct LaunchOptions {
  JobConfig job;
  int logicalWorkers = 0;         // 0: one per process (DDP mode)
  std::vector<int64_t> placement;  // empty: spread evenly in rank order
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  int64_t stopAtStep = 0;
  std::string resume;              // checkpoint folder to continue from
  std::string coordinatorDir;      // node coordinator's run directory (--workers auto)
  std::string gpuComm = "nccl";    // how GPU tensors travel between processes: nccl or mpi
  std::set<std::string> given;     // flags given on the command line
  bool help = false;
  std::string usage;  // filled when help is true
};

// Parses tl-launch's arguments (argv[0] excluded). Throws InputError naming the flag.
LaunchOptions parseLaunchOptions(const std::vector<std::string>& args);

// Where the embedded default dataset lives (Debian's dataset-fashion-mnist).
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace tl::launcher
