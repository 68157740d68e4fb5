// tl-launch: one training job, run as `mpirun -np P tl-launch ...`. The job has N logical
// workers (default: one per process); this process runs its share of them as ESTs.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "common/allocator_tuning.h"
#include "common/check.h"
#include "common/files.h"
#include "common/signals.h"
#include "common/version.h"
#include "elastic/checkpoint_policy.h"
#include "elastic/job_checkpoint.h"
#include "est/executor.h"
#include "launcher/cache_metrics.h"
#include "elastic/rescale/elastic_job.h"
#include "launcher/job_errors.h"
#include "launcher/launch_check.h"
#include "launcher/launch_options.h"
#include "launcher/loader_tuning.h"
#include "launcher/output_paths.h"
#include "elastic/recovery/recovery_guard.h"
#include "launcher/usage_recording.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/mpi/mpi_spawn.h"
#include "runtime/comm/nccl/nccl_communicator.h"
#include "runtime/models/state_dict_io.h"
#include "runtime/models/torchscript_model.h"
#include "runtime/train/summary.h"
#include "runtime/train/trainer_result.h"
#include "runtime/usage/counting_communicator.h"

namespace {

constexpr const char* kProgram = "tl-launch";

// Set by SIGUSR1 (mpirun forwards it to every rank): checkpoint at the next step boundary, exit.
std::atomic<bool> gStopRequested{false};
void onStopSignal(int) { gStopRequested.store(true); }

void installStopSignal() { tl::handleSignals({SIGUSR1}, onStopSignal); }

// Under tl-run: this process's copy of the job, written when the job is lost (main's catch, so
// it outlives the unwinding of runLaunch).
std::unique_ptr<tl::launcher::RecoveryGuard> gRecovery;

int localRankFromEnvironment() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

// Peak resident memory (VmHWM) over the job's processes: the largest one and the sum.
struct PeakMemory {
  double maxMb = 0, sumMb = 0;
};

double ownPeakRssMb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;  // kB
  }
  return 0;
}

PeakMemory peakMemory(tl::comm::Communicator& world) {
  const double mine = ownPeakRssMb();
  at::Tensor v = at::full({1}, mine, at::kDouble);
  at::Tensor m = v.clone();
  world.allreduce(v, tl::comm::ReduceOp::Sum);
  world.allreduce(m, tl::comm::ReduceOp::Max);
  return {m.item<double>(), v.item<double>()};
}

// --skip-corrupt: how many distinct files the job replaced (a file met by several processes
// counts once).
int64_t corruptFilesSkipped(tl::comm::Communicator& world, const std::vector<int64_t>& mine) {
  at::Tensor count = at::full({1}, int64_t(mine.size()), at::kLong);
  world.allreduce(count, tl::comm::ReduceOp::Max);
  const int64_t width = count.item<int64_t>();
  if (width == 0) return 0;
  at::Tensor padded = at::full({width}, int64_t(-1), at::kLong);
  for (size_t i = 0; i < mine.size(); ++i) padded[int64_t(i)] = mine[i];
  at::Tensor all = std::get<0>(at::_unique(world.allgather(padded).flatten()));
  return (all >= 0).sum().item<int64_t>();
}

}  // namespace

// libtorch's CUDA caching allocator, when this libtorch has one (a CPU-only libtorch does not:
// the weak reference is then null).
namespace c10::cuda::CUDACachingAllocator {
__attribute__((weak)) void emptyCache();
}

namespace {

using namespace tl;  // this file is tl-launch's main: the whole runtime is its vocabulary

void releaseCachedDeviceMemory() {
  if (&c10::cuda::CUDACachingAllocator::emptyCache != nullptr) c10::cuda::CUDACachingAllocator::emptyCache();
}

// What ends a launch, on the members still in the job at its end: the summary (lead) and the
// final barrier. A process that left the job (in-place shrink) just returns.
struct Ending {
  bool resumed = false;
  std::string checkpointDir;
  launcher::RecoveryGuard* recovery = nullptr;  // under tl-run: the observer run() reports to
  launcher::UsageRecording* usage = nullptr;     // resource recording
};

int trainToTheEnd(std::unique_ptr<est::EstExecutor>& owned, launcher::ElasticController& controller,
                  elastic::CheckpointPolicy& policy, train::MetricsLog& metrics, const Ending& ending) {
  using namespace tl;
  est::EstExecutor& executor = *owned;
  est::StepObserver* observer = ending.recovery ? static_cast<est::StepObserver*>(ending.recovery) : &controller;
  std::optional<launcher::UsageObserver> recording;
  if (ending.usage) {
    recording.emplace(observer, *ending.usage);
    observer = &*recording;
    ending.usage->recorder().start();
  }
  train::TrainResult result = executor.run(metrics, observer);
  controller.finish(policy.stopped() ? "the job stopped" : "the job has finished");
  if (!executor.inJob()) {
    if (ending.recovery) ending.recovery->leave();
    if (ending.usage) ending.usage->recorder().finish();  // its figures went to the lead as it left
    spdlog::info("this process left the job after step {}", executor.stepsDone());
    // It may have to wait for the job's end (mpirun's own processes finalize together): it
    // gives back its memory and, on a GPU, the device memory libtorch keeps cached.
    const bool cuda = executor.config().device.isCuda();
    owned.reset();
    if (cuda) releaseCachedDeviceMemory();
    return 0;
  }
  comm::Communicator& host = executor.comm();
  const bool lead = host.rank() == 0;
  const PeakMemory memory = peakMemory(host);
  const int64_t corruptFiles = corruptFilesSkipped(host, result.corruptSamples);
  const nlohmann::json usagePerProcess = ending.usage ? ending.usage->gather(host) : nlohmann::json();
  const nlohmann::json usage = ending.usage ? ending.usage->recorder().finish() : nlohmann::json();
  const JobConfig& job = executor.config();
  if (lead) {
    train::RunInfo info;
    info.processes = host.size();
    info.logicalWorkers = executor.placement().logicalWorkers();
    info.placement = executor.placement().toString();
    auto summary = train::summaryJson(result, job, info);
    summary["resumed"] = ending.resumed;
    summary["stopped_at_checkpoint"] = policy.stopped();
    summary["total_steps"] = executor.plan().totalSteps;
    summary["peak_rss_mb"] = memory.maxMb;
    summary["peak_rss_mb_sum"] = memory.sumMb;
    summary["corrupt_files_skipped"] = corruptFiles;
    summary["usage"] = usage;
    summary["usage_processes"] = usagePerProcess;
    summary["inplace_rescales"] = controller.rescales();
    summary["inplace_rescale_max_pause_s"] = controller.maxPauseSeconds();
    if (ending.recovery) summary["recovery"] = ending.recovery->counts();
    if (controller.autoPlacer()) controller.autoPlacer()->addToSummary(summary);
    if (!job.outputDir.empty()) train::writeSummary(summary, job.outputDir);
    if (!job.saveModel.empty()) {
      models::saveStateDict(executor.model(), job.saveModel);
      models::saveTorchScript(executor.model(), models::torchScriptSavePath(job.saveModel));  // --model-file
    }
    spdlog::info("{} {} steps in {:.1f} s, {:.1f} images/s, final loss {:.4f}{}",
                 policy.stopped() ? "stopped after" : "done:", result.stepsThisRun, result.wallSeconds,
                 result.imagesPerSecond, result.finalLoss,
                 result.evaluated ? tl::str(", test accuracy ", result.testAccuracy * 100, "%") : "");
    spdlog::info("params_sha256 {}", result.paramsSha256);
    if (policy.stopped() && !ending.checkpointDir.empty()) {
      std::printf("%s: checkpoint at step %lld written to %s; continue with: mpirun -np P %s --resume %s\n",
                  kProgram, (long long)result.steps, ending.checkpointDir.c_str(), kProgram,
                  ending.checkpointDir.c_str());
    } else if (policy.stopped()) {
      std::printf("%s: stop requested, but no --checkpoint-dir or --output-dir: stopped without a checkpoint\n",
                  kProgram);
    }
    std::fflush(stdout);
  }
  host.barrier();
  return 0;
}

elastic::CheckpointPolicyOptions policyOptions(const launcher::JoinOffer& o) {
  elastic::CheckpointPolicyOptions po;
  po.dir = o.checkpointDir;
  po.every = o.checkpointEvery;
  po.stopAtStep = o.stopAtStep;
  po.stopRequested = &gStopRequested;
  return po;
}

// A process started by an in-place grow (tl-ctl rescale): gets ready while the job trains, joins
// at a step boundary, and from then on is a member like any other.
int runJoined(comm::ParentLink& lead) {
  using namespace tl;
  spdlog::set_pattern("%H:%M:%S [tl] %v");
  installStopSignal();
  // Resource recording from the join on; its memory floor is taken before the executor is built.
  std::unique_ptr<usage::UsageRecorder> usageRecorder;
  std::unique_ptr<launcher::JoinedProcess> joined;
  try {
    joined = launcher::joinRunningJob(lead, [&](const JobConfig& job) {
      usageRecorder = std::make_unique<usage::UsageRecorder>(launcher::usageOptionsFor(job));
    });
  } catch (const std::exception& e) {
    // Already reported to the lead, which answers the rescale request with it; this process
    // was never a member, so the job goes on without it.
    launcher::printError(kProgram, e.what());
    return 0;
  }
  if (!joined) return 0;
  elastic::CheckpointPolicy policy(policyOptions(joined->offer));
  launcher::ElasticSettings settings;
  settings.offer = joined->offer;
  train::MetricsLog metrics;  // never the lead: rank 0 never leaves
  launcher::UsageRecording recording(*usageRecorder, metrics, /*startedByGrow=*/true);
  joined->membership.recorder = &recording;
  launcher::ElasticController controller(joined->membership, policy, settings, nullptr);
  elastic::AutoPlacer placer(joined->offer.autoPlacement, nullptr);
  controller.setAutoPlacer(&placer);
  controller.apply(joined->command, *joined->executor, &lead);
  joined->retired.clear();
  recording.joinedAt(joined->executor->stepsDone());
  if (!joined->offer.recoveryDir.empty()) {
    gRecovery = std::make_unique<launcher::RecoveryGuard>(joined->offer.recoveryDir, controller, *joined->executor);
    gRecovery->watchTermination();
  }
  Ending ending;
  ending.recovery = gRecovery.get();
  ending.resumed = true;
  ending.checkpointDir = joined->offer.checkpointDir;
  ending.usage = &recording;
  const int rc = trainToTheEnd(joined->executor, controller, policy, metrics, ending);
  gRecovery.reset();
  return rc;
}

int runLaunch(int argc, char** argv) {
  using namespace tl;
  if (auto parent = comm::ParentLink::ofThisProcess()) return runJoined(*parent);
  auto world = comm::createMpiWorldCommunicator();
  const bool lead = world->rank() == 0;
  spdlog::set_pattern("%H:%M:%S [tl] %v");
  installStopSignal();

  launcher::LaunchOptions options;
  // Declared before the executor, which uses the counting communicators until it is gone.
  std::unique_ptr<usage::UsageRecorder> usageRecorder;
  std::unique_ptr<comm::Communicator> countedHost, countedDevice;
  std::unique_ptr<est::EstExecutor> executor;
  bool resumed = false;
  JobConfig job;
  std::optional<est::Placement> placement;
  std::optional<elastic::JobCheckpoint> checkpoint;
  launcher::HeldOutputs outputs;  // the lead rank's locks on the job's folders
  // Start-up in two collective-free phases, each ending with every rank agreeing that all went
  // well, around the one collective set-up step (the GPU communicator).
  int failed = launcher::prepareOnAllRanks(*world, kProgram, [&] {
    std::vector<std::string> args(argv + 1, argv + argc);
    options = launcher::parseLaunchOptions(args);
    if (options.help) return;
    if (!options.resume.empty()) {
      checkpoint = elastic::readJobCheckpoint(options.resume);
      options = launcher::parseResumeOptions(args, checkpoint->config);
      resumed = true;
    }
    if (checkpoint) elastic::checkResumeData(*checkpoint, options.job, /*warn=*/lead);
    auto mine = launcher::jobForProcess(options, world->size(), localRankFromEnvironment());
    job = std::move(mine.job);
    placement = std::move(mine.placement);
    if (lead) outputs = launcher::prepareOutputs(options);
  });
  if (failed) return failed;
  world->setTimeout(collectiveTimeout(job));
  if (options.help) {
    if (lead) std::fputs(options.usage.c_str(), stdout);
    return 0;
  }
  // Gradients and model state of GPU jobs travel over NCCL (or, with --gpu-comm mpi, over MPI
  // through host memory); host-side metadata over MPI.
  std::unique_ptr<comm::Communicator> gpuComm;
  if (job.device.isCuda() && options.gpuComm == "nccl") gpuComm = comm::createNcclCommunicator(*world, job.deviceIndex);
  usageRecorder = std::make_unique<usage::UsageRecorder>(launcher::usageOptionsFor(job));
  countedHost = usage::countTraffic(*world, usageRecorder->traffic());
  if (gpuComm) countedDevice = usage::countTraffic(*gpuComm, usageRecorder->traffic());
  comm::Communicator& deviceComm = gpuComm ? *countedDevice : *countedHost;
  failed = launcher::prepareOnAllRanks(*world, kProgram, [&] {
    executor = std::make_unique<est::EstExecutor>(job, *placement, *countedHost, deviceComm);
    if (checkpoint) elastic::restoreJob(*executor, *checkpoint);
    checkpoint.reset();
  });
  if (failed) return failed;

  job = executor->config();
  if (lead) {
    spdlog::info("{} {} logical workers on {} processes (placement {}), model {} ({} parameters), "
                 "reduction {}, steps {} to {} ({} per epoch), batch {} per worker",
                 resumed ? "resuming:" : "job:", executor->placement().logicalWorkers(), world->size(),
                 executor->placement().toString(), job.model.arch, models::countParameters(executor->model()),
                 toString(job.reduction), executor->stepsDone(), executor->plan().totalSteps,
                 executor->plan().stepsPerEpoch, job.batch);
  }
  train::MetricsLog metrics;
  if (lead && !job.outputDir.empty()) {
    metrics = train::MetricsLog(joinPath(job.outputDir, "metrics.jsonl"), /*append=*/resumed);
    launcher::reportCacheInEpochRecords(metrics, executor->data().train->dataset());
  }
  launcher::JoinOffer offer;
  offer.job = job;
  if (!job.dataDir.empty()) offer.job.dataDir = std::filesystem::absolute(job.dataDir).lexically_normal().string();
  if (!job.outputDir.empty()) offer.job.outputDir = std::filesystem::absolute(job.outputDir).string();
  offer.job.saveModel.clear();  // written by the lead
  offer.gpuComm = options.gpuComm;
  offer.checkpointDir = options.checkpointDir.empty() ? "" : std::filesystem::absolute(options.checkpointDir).string();
  offer.checkpointEvery = options.checkpointEvery;
  offer.stopAtStep = options.stopAtStep;
  if (!options.recoveryDir.empty()) offer.recoveryDir = std::filesystem::absolute(options.recoveryDir).string();
  offer.autoPlacement = options.autoPlacement;
  elastic::CheckpointPolicy policy(policyOptions(offer));
  std::unique_ptr<launcher::CoordinatorTuner> tuner;
  if (job.autoWorkers) {
    tuner = launcher::connectToCoordinator(job, options.coordinatorDir, world->rank(),
                                           executor->data().train->dataset().sampleCache());
    executor->setLoaderTuner(tuner.get());
  }
  launcher::Membership membership;
  membership.useNccl = gpuComm != nullptr;
  membership.deviceIndex = job.deviceIndex;
  membership.host = std::move(world);
  membership.gpu = std::move(gpuComm);
  launcher::UsageRecording recording(*usageRecorder, metrics, /*startedByGrow=*/false);
  membership.recorder = &recording;
  launcher::ElasticSettings settings;
  settings.program = std::filesystem::read_symlink("/proc/self/exe").string();
  settings.controlBind = options.controlBind == "none" ? "" : options.controlBind;
  settings.controlPort = options.controlPort;
  if (const char* slots = std::getenv("OMPI_UNIVERSE_SIZE")) settings.slots = std::atoi(slots);
  if (const char* over = std::getenv("OMPI_MCA_rmaps_base_oversubscribe")) settings.oversubscribe = std::atoi(over) != 0;
  settings.startedWithTheJob = membership.host->size();
  settings.joinTimeoutSeconds = options.joinTimeoutSeconds;
  settings.offer = offer;
  launcher::ElasticController controller(membership, policy, settings, lead ? &metrics : nullptr);
  elastic::AutoPlacer placer(options.autoPlacement, lead ? &metrics : nullptr);
  controller.setAutoPlacer(&placer);
  executor->setEmulatedSlowdown(options.autoPlacement.slowdownFor(membership.host->rank(), executor->stepsDone()));
  controller.startControl(*executor);
  if (!offer.recoveryDir.empty()) {
    failed = launcher::prepareOnAllRanks(executor->comm(), kProgram, [&] {
      gRecovery = std::make_unique<launcher::RecoveryGuard>(offer.recoveryDir, controller, *executor);
    });
    if (failed) return failed;
    gRecovery->setMetrics(lead ? &metrics : nullptr);
    gRecovery->start(*executor);
    gRecovery->watchTermination();
    if (lead) gRecovery->setStatusSink([&controller](const nlohmann::json& c) { controller.annotateStatus("recovery", c); });
  }
  Ending ending;
  ending.resumed = resumed;
  ending.checkpointDir = options.checkpointDir;
  ending.recovery = gRecovery.get();
  ending.usage = &recording;
  const int rc = trainToTheEnd(executor, controller, policy, metrics, ending);
  gRecovery.reset();
  tuner.reset();
  return rc;
}

}  // namespace

// --version answers without MPI, so it works outside mpirun (and on a login node).
bool wantsVersion(int argc, char** argv) {
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
    if (std::string(argv[i]) == "--version") return true;
  }
  return false;
}

int main(int argc, char** argv) {
  if (wantsVersion(argc, argv)) {
    std::printf("%s\n", tl::versionLine(kProgram).c_str());
    return 0;
  }
  if (tl::launcher::wantsCheck(argc, argv)) return tl::launcher::runCheck(argc, argv);  // no MPI
  tl::tuneAllocatorForTraining();
  std::unique_ptr<tl::comm::MpiSession> mpi;
  try {
    mpi = std::make_unique<tl::comm::MpiSession>(&argc, &argv);
  } catch (const std::exception& e) {
    tl::launcher::printError(kProgram, e.what());
    return 1;
  }
  // A failure after start-up may hit one rank only while the others wait in a collective:
  // abort the whole job at once (MPI still alive) rather than unwind into MPI_Finalize.
  try {
    return runLaunch(argc, argv);
  } catch (const tl::InputError& e) {
    tl::launcher::printError(kProgram, e.what());
    tl::comm::MpiSession::abortJob(2);
  } catch (const tl::TimeoutError& e) {
    // A hung (or lost) member: this one survives it; tl-run resumes from the copies.
    if (gRecovery) gRecovery->writeCandidate(e.what(), tl::launcher::ranksNamedByTimeout(e.what()));
    tl::launcher::printError(kProgram, e.what());
    tl::comm::MpiSession::abortJob(1);
  } catch (const std::exception& e) {
    // Its own failure: this rank counts as lost, but its copy of the last boundary is sound.
    if (gRecovery) gRecovery->writeCandidate(std::string("failed: ") + e.what(), {gRecovery->rank()});
    tl::launcher::printError(kProgram, e.what());
    tl::comm::MpiSession::abortJob(1);
  }
}
