// tl-launch's command line: how argv becomes a job (definition + run settings) and the
// settings of this launch. The flags themselves are declared in launcher/job_flags.h.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "est/placement.h"
#include "elastic/placement/auto_placement_options.h"
#include "runtime/job_config.h"

namespace tl::launcher {

struct LaunchOptions {
  JobConfig job;                   // logicalWorkers 0: one per process (DDP mode)
  std::vector<int64_t> placement;  // empty: spread evenly in rank order
  elastic::AutoPlacementOptions autoPlacement;  // --placement auto, --emulate-*: elastic/placement/auto_placement.h
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  int64_t stopAtStep = 0;
  std::string resume;              // checkpoint folder to continue from
  std::string coordinatorDir;      // node coordinator's run directory (--workers auto)
  std::string gpuComm = "nccl";    // how GPU tensors travel between processes: nccl or mpi
  std::string controlBind = "127.0.0.1";  // the control channel's address; "none": no channel
  int controlPort = 0;
  double joinTimeoutSeconds = 300;  // a process started by a grow must be ready by then
  std::string recoveryDir;         // tl-run's: keep a copy of the job for recovery (empty: none)
  bool check = false;              // --check: validate the job and its paths, train nothing
  int checkProcesses = 0;          // --check: the processes the job will have (0: as launched)
  std::set<std::string> given;     // flags given on the command line
  bool help = false;
  std::string usage;  // filled when help is true
};

// Parses tl-launch's arguments (argv[0] excluded) for a new job. InputError naming the flag.
LaunchOptions parseLaunchOptions(const std::vector<std::string>& args);

// Parses the arguments of a launch that resumes `saved` (the checkpoint's job): flags not given
// keep the checkpoint's values, run settings given replace them, and a defining flag whose value
// differs from the checkpoint's is refused (InputError naming every such flag, both values).
LaunchOptions parseResumeOptions(const std::vector<std::string>& args, const JobConfig& saved);

// The job as one of `processes` processes runs it (`localRank` picks its device): N one per
// process unless given, --placement or an even placement, the device resolved and checked.
// InputError naming the flag. Shared by a launch and tl-launch --check.
struct ProcessJob {
  JobConfig job;
  est::Placement placement;
};
ProcessJob jobForProcess(const LaunchOptions& options, int processes, int localRank);

// Where the embedded default dataset lives (Debian's dataset-fashion-mnist).
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace tl::launcher
