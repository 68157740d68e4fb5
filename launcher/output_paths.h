// Everything a launch writes — the output folder (metrics.jsonl, summary.json), the checkpoint
// folder, the --save-model file — is checked before the first step, so a typo in a path costs
// seconds, not the training run.
#pragma once

#include <string>
#include <vector>

#include "launcher/job_lock.h"
#include "launcher/launch_options.h"

namespace tl::launcher {

// A folder the launch writes into, or the folder of a file it writes.
struct OutputPath {
  std::string flag;  // the flag that names it: "--output-dir", "--checkpoint-dir", "--save-model"
  std::string path;  // the folder, or the file (--save-model)
  bool isFile = false;
};

// The paths `options` would write, in flag order.
std::vector<OutputPath> outputPaths(const LaunchOptions& options);

// What the lead rank keeps for the job's life: the locks of its folders.
struct HeldOutputs {
  std::vector<JobLock> locks;
};

// The lead rank, before anything is built: creates every folder (a --save-model file's too),
// checks it can be written, takes its job lock (one live job per folder) and removes the
// temporaries dead writers left in it. InputError naming the flag and the path.
HeldOutputs prepareOutputs(const LaunchOptions& options);

// tl-launch --check: the same checks without creating or changing anything: each folder, or
// its nearest existing parent, is a writable folder, and no live job holds it.
void checkOutputs(const LaunchOptions& options);

}  // namespace tl::launcher
