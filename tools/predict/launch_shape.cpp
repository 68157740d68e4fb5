#include "tools/predict/launch_shape.h"

#include <algorithm>
#include <set>

#include "common/check.h"
#include "est/local_batches.h"
#include "est/placement.h"
#include "launcher/job_flags.h"
#include "launcher/launch_options.h"
#include "runtime/train/data_setup.h"
#include "runtime/train/trainer_result.h"

namespace tl::predict {
namespace {

// The flags whose values the prediction uses.
const std::set<std::string> kModelled = {
    "model",  "depth",     "no-batchnorm", "dataset",         "data-dir",        "image-size",
    "batch",  "drop-last", "epochs",       "steps",           "optimizer",       "logical-workers",
    "placement", "compute-threads", "reduction", "device"};

// The flags that change nothing the twelve metrics measure: the learning rule's numbers, the
// seed, where files go, logging, timeouts and the control channel.
const std::set<std::string> kNoResourceEffect = {
    "dropout",      "lr",          "momentum",  "dampening",           "weight-decay",
    "beta1",        "beta2",       "eps",       "rho",                 "lr-decay",
    "initial-accumulator", "lr-schedule", "lr-step-epochs", "lr-gamma", "warmup-epochs",
    "min-lr",       "seed",        "output-dir", "log-every",          "collective-timeout",
    "control-bind", "control-port", "join-timeout", "coordinator-dir"};

// Any other flag given (the loader's threads, the cache, evaluation, checkpoints, overlap,
// buckets, auto placement, ...) changes what the job uses in ways the model leaves out.
std::vector<std::string> unmodelledFlags(const launcher::LaunchOptions& options) {
  std::vector<std::string> out;
  for (const launcher::LaunchFlag& flag : launcher::launchFlags()) {
    if (!options.given.count(flag.name) || kModelled.count(flag.name) ||
        kNoResourceEffect.count(flag.name))
      continue;
    out.push_back("--" + flag.name + (flag.isSwitch ? "" : " " + flag.show(options)));
  }
  if (options.autoPlacement.enabled) out.push_back("--placement auto");
  return out;
}

}  // namespace

LaunchShape shapeFromLaunchFlags(const std::vector<std::string>& launchArgs, int processes) {
  const launcher::LaunchOptions options = launcher::parseLaunchOptions(launchArgs);
  TL_REQUIRE(!options.help, "--help after `--`: see tl-launch --help for the job's flags");
  TL_REQUIRE(options.resume.empty(),
             "--resume: tl-predict predicts a job from its flags; give the checkpoint's job flags");
  JobConfig job = options.job;
  if (!options.placement.empty()) {
    const int placed = int(options.placement.size());
    TL_REQUIRE(processes == 0 || processes == placed, "--processes ", processes, " differs from the ",
               placed, " processes of --placement");
    processes = placed;
  }
  if (processes == 0) processes = 1;
  if (job.logicalWorkers == 0) job.logicalWorkers = processes;
  const est::Placement placement =
      options.placement.empty()
          ? est::Placement::even(job.logicalWorkers, processes)
          : est::Placement::explicitCounts(options.placement, job.logicalWorkers, processes);
  TL_REQUIRE(!job.device.isSimulated(), "--device ", job.device.toString(),
             ": a simulated device has no resources to predict");
  if (!job.model.file.empty())
    inputError("--model-file: tl-predict models only the built-in architectures (--model); run the "
               "TorchScript job and read its usage figures instead");

  // The data, opened as the job opens it: the model's input geometry and the epoch's length.
  const train::JobData data = train::openJobData(job);
  train::adaptModelToData(job, *data.train);
  const int64_t batchesPerEpoch =
      est::shardStream(job, data.train->size(), job.logicalWorkers, 0).batchesPerEpoch();

  LaunchShape out;
  JobShape& s = out.shape;
  s.model = job.model;
  s.batch = job.batch;
  s.processes = processes;
  int most = 0;
  for (int rank = 0; rank < processes; ++rank) most = std::max(most, placement.count(rank));
  s.estsPerProcess = most;  // the step waits for the most loaded process
  s.steps = train::planSteps(job, batchesPerEpoch).totalSteps;
  s.reduction = toString(job.reduction);
  s.optimizer = job.optimizer.name;
  s.device = job.device.isCuda() ? "cuda" : "cpu";
  s.computeThreads = job.computeThreads;
  out.unmodelled = unmodelledFlags(options);
  if (most * processes != job.logicalWorkers) {
    out.unmodelled.push_back("the uneven placement " + placement.toString() + " (predicted as " +
                             std::to_string(most) + " ESTs on every process)");
  }
  return out;
}

std::string unmodelledLine(const std::vector<std::string>& unmodelled) {
  if (unmodelled.empty()) return "";
  std::string line = "not modelled (predicted as if not given): ";
  for (size_t i = 0; i < unmodelled.size(); ++i) line += (i ? ", " : "") + unmodelled[i];
  return line;
}

}  // namespace tl::predict
