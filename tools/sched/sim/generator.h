// Seeded synthetic traces fitted to published statistics of Microsoft's Philly trace
// (Jeon et al., ATC'19): ~93% of jobs use 1 GPU while 8-GPU jobs hold ~48% of GPU-time;
// durations lognormal (ln-seconds mu 7.12, sigma 1.98: median ~20 min); arrivals Poisson or
// bursty (an on/off modulated Poisson process with a chosen inter-arrival CV).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/sched/sim/workload.h"

namespace tl::sched {

struct GeneratorOptions {
  int jobs = 160;
  double spanSeconds = 8 * 3600;  // mean arrival rate = jobs / span
  double interArrivalCv = 1;      // 1: Poisson; > 1: on/off modulated Poisson
  double lnMu = 7.12, lnSigma = 1.98;  // duration of a 1-GPU job, ln seconds
  double durationScale = 1;            // multiplies every duration (presets fit a load)
  double maxDurationSeconds = 0;       // > 0: durations are capped there
  // GPU counts and their shares of jobs; multi-GPU jobs run longer by durationFactor (that is
  // what gives 8-GPU jobs their share of GPU-time in Philly).
  std::vector<int> gpuCounts{1, 2, 4, 8};
  std::vector<double> gpuShares{0.93, 0.03, 0.02, 0.02};
  std::vector<double> durationFactor{1, 2, 2, 7};
  std::vector<std::string> models{"resnet20", "cnn"};
  std::string referenceKind;  // work = duration x rate on max_gpus of this kind
  std::vector<std::string> queues{"default"};
  bool elastic = true;  // min_gpus 1 (else min = max)
  // The request is the gang of non-elastic policies; elastic ones may grow a job up to
  // request x growFactor GPUs (at most maxGpusCap); the job has that many ESTs.
  int growFactor = 1;
  int maxGpusCap = 16;
  // > 0: every duration is scaled (after the cap) so that the trace's GPU-time is this share of
  // `loadKinds`' capacity over the span, counted in reference-kind GPUs by the first model's
  // single-GPU rates. A heavy-tailed sample's GPU-time is far from its expectation, so presets
  // fix the realised load instead of hoping for it.
  double targetLoad = 0;
  std::vector<GpuKind> loadKinds;
  // > 0 (tl-sim --load L): contention over the arrival window [0, loadWindowSeconds(...)).
  // Durations keep the preset's scale (GPU-time of the drawn stream = capacity over its
  // arrivals) and are capped; arrivals come at the preset's pattern, compressed until the work
  // the jobs offer inside the window at their request (request x min(duration, window -
  // arrival), reference-kind GPUs) is L x the capacity of `loadKinds` x the window. Work past
  // the window does not count, so a few heavy-tailed jobs cannot make up the load while the
  // cluster idles: at L > 1 the requests exceed the cluster during the window. The number of
  // jobs follows (more than `jobs` x L on presets whose jobs outlive the window).
  double arrivalLoad = 0;
  uint64_t seed = 1;
};

struct Preset {
  std::string name;
  ClusterSpec cluster;
  GeneratorOptions generator;
};

// "pollux": 160 jobs over 8 h on 64 GPUs of one kind; "easyscale": 70 jobs over 80 min on
// 32 + 16 + 16 GPUs of three kinds; "large": 10,000 jobs over 72 h on 1000 GPUs of three
// kinds (bursty, CV 15). Each at an offered load of 1 (see targetLoad), durations capped at
// twice the span (100 h for large); arrivalLoad (tl-sim --load) then rescales the arrivals.
Preset preset(const std::string& name);
const std::vector<std::string>& presetNames();

class ProfileSet;
// The jobs, sorted by arrival, named job-0000... Work comes from `profiles` (see referenceKind).
std::vector<JobSpec> generateTrace(const GeneratorOptions& options, const ProfileSet& profiles);

// tl-sim --load's arrival window: the preset's span, or three mean holding times on the slowest
// kind if that is longer. A job's holding time is its GPU-seconds at the preset's load of 1
// (capacity x span / jobs) over the mean request, in reference-kind seconds, x the reference
// kind's speed over the slowest kind's. A kind-blind non-elastic scheduler (yarn-cs) starts
// jobs on the slow kinds while they have room, and there a job holds its GPUs that much
// longer: excess work then stretches running jobs instead of queueing new ones. Only a window
// several such holds long fills the cluster long enough for a queue to form. Three is the
// smallest whole number of holds with which yarn-cs queued for >= 1/3 of JCT at load 1.3 on
// every seed of easyscale (two gave 0.25-0.45). On the presets: pollux and large keep their
// span (three holds are 0.98 and 0.67 of it); easyscale's window is 29,436 s, 6.1 spans (a hold
// on its slow kind is 9,812 s, twice its 80-minute span).
double loadWindowSeconds(const GeneratorOptions& options, const ProfileSet& profiles);

// The load `jobs` offer inside [0, window): request x min(duration, window - arrival) summed in
// reference-kind GPU-seconds, over `loadKinds`' capacity x window (what arrivalLoad fixes).
double offeredWindowLoad(const std::vector<JobSpec>& jobs, double window,
                         const GeneratorOptions& options, const ProfileSet& profiles);

}  // namespace tl::sched
