// One burst of tl-profile: a short run of the job with a fixed number of loader workers, and
// what it measured (read back from the burst's summary.json and metrics.jsonl).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "coordinator/throughput_model.h"
#include "tools/submit/mpirun_command.h"

namespace tl::profile {

struct BurstMeasurement {
  int workers = 0;
  int exitCode = -1;
  bool ok() const { return exitCode == 0 && imagesPerSecond > 0; }
  // Job images/s, without the warm-up steps when the step records allow (warmupExcluded).
  double imagesPerSecond = 0;
  double waitShare = 0;  // share of the training time spent waiting for data (rank 0)
  bool warmupExcluded = false;
  // The steady window starts after the burst's first epoch (--cache-mb bursts ask for it): every
  // read in it is a re-read, as in the steady state a cached job runs in. False when the burst
  // ended within its first epoch (its figures are then cold) or did not ask.
  bool warm = false;
  int64_t firstEpochSteps = 0;  // steps of the first epoch; 0 when the burst never finished it
  // Rank 0's loader and device, when summary.json carries them ("loader", "compute_s") and
  // the burst had loader workers. The device's time is the steady window's time not spent
  // waiting for data when the warm-up could be left out, else compute_s.
  bool hasLoaderMeasurement = false;
  coordinator::LoaderObservation loader;
  coordinator::ComputeObservation compute;
  double jobPerProcessRatio = 1;  // job images / rank 0's images (logical workers / rank 0's ESTs)
  std::string note;               // why a burst has no numbers
};

// Reads a finished burst's output folder. `warmupSteps` first steps are left out of the rate
// and the wait share when metrics.jsonl has later steps to measure; with `skipFirstEpoch`, the
// whole first epoch too when the burst has steps after it (then `warm`).
BurstMeasurement readBurst(const std::string& folder, int workers, int warmupSteps,
                           bool skipFirstEpoch = false);

struct BurstSpec {
  submit::MpirunOptions mpirun;
  int processes = 1;
  std::vector<std::string> jobFlags;  // tl-launch flags of the job, without steps/workers/output
  int steps = 30;
  int warmupSteps = 2;
  bool skipFirstEpoch = false;  // measure warm: leave the first epoch out (readBurst)
  std::string cpus;  // taskset CPU list; empty: no limit
  // How many interrupts (Ctrl-C) have arrived; each new one is forwarded to the running burst.
  std::function<int()> interrupts = [] { return 0; };
};

// The tl-launch flags of the burst with `workers` loader workers writing into `folder`: the
// job's flags, then --steps N --workers w --output-dir folder.
std::vector<std::string> burstLaunchFlags(const BurstSpec& spec, int workers,
                                          const std::string& folder);

// Runs `mpirun ... tl-launch <jobFlags> --steps N --workers w --output-dir folder` (under
// `taskset -c cpus` when given), its output in <folder>/job.log, and reads the result.
BurstMeasurement runBurst(const BurstSpec& spec, int workers, const std::string& folder);

// The flags tl-profile sets for every burst; the job's own flags must not contain them.
const std::vector<std::string>& burstOwnedFlags();

}  // namespace tl::profile
