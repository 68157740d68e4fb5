// tl-launch: one training job, run as `mpirun -np P tl-launch ...`. The job has N logical
// workers (default: one per process); this process runs its share of them as ESTs.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>

#include "common/allocator_tuning.h"
#include "common/check.h"
#include "common/files.h"
#include "common/signals.h"
#include "common/version.h"
#include "elastic/checkpoint/job_checkpoint.h"
#include "est/executor.h"
#include "launcher/cache_metrics.h"
#include "launcher/job_errors.h"
#include "launcher/launch_check.h"
#include "launcher/launch_options.h"
#include "launcher/loader_tuning.h"
#include "launcher/output_paths.h"
#include "elastic/recovery/in_place.h"
#include "elastic/recovery/recovery_guard.h"
#include "elastic/rescale/elastic_controller.h"
#include "elastic/rescale/join_running_job.h"
#include "launcher/training_process.h"
#include "launcher/usage_recording.h"
#include "runtime/comm/collective_timeout.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/mpi/mpi_spawn.h"
#include "runtime/comm/nccl/nccl_communicator.h"
#include "runtime/usage/counting_communicator.h"

namespace {

constexpr const char* kProgram = "tl-launch";

// Set by SIGUSR1 (mpirun forwards it to every rank): checkpoint at the next step boundary, exit.
std::atomic<bool> gStopRequested{false};
void onStopSignal(int) { gStopRequested.store(true); }

void installStopSignal() { tl::handleSignals({SIGUSR1}, onStopSignal); }

// Under tl-run: what writes this process's copy of the job when the job is lost (from its
// SIGTERM watcher, or writeCandidateAfter).
std::unique_ptr<tl::elastic::RecoveryGuard> gRecovery;

// An error leaves the training: the copy of the job, written while the executor still exists
// (it copies the live replica). A hung or lost member (a collective timed out): this one
// survives it. Its own failure: this rank counts as lost, but its copy of the last boundary is
// sound. Bad input: no copy.
void writeCandidateAfter(const std::exception& e) {
  if (!gRecovery || dynamic_cast<const tl::InputError*>(&e)) return;
  if (dynamic_cast<const tl::comm::MembersLost*>(&e)) {
    // Members were lost outside the step loop (in place armed): this process survives them.
    gRecovery->writeCandidate({e.what(), false, gRecovery->losses().ranks});
  } else if (dynamic_cast<const tl::TimeoutError*>(&e)) {
    const auto* collective = dynamic_cast<const tl::comm::CollectiveTimeout*>(&e);
    gRecovery->writeCandidate(
        {e.what(), /*timedOut=*/true, collective ? collective->absentRanks() : std::vector<int>{}});
  } else {
    gRecovery->writeCandidate({std::string("failed: ") + e.what(), false, {gRecovery->rank()}});
  }
  gRecovery->leave();  // the executor goes away with the unwinding
}

// tl-run's in-place launches learn of a failing process from this (mpirun exits 0 regardless).
void noteExitStatus(int status) { tl::elastic::noteExitStatus(std::getenv(tl::elastic::kExitFileEnv), status); }

int localRankFromEnvironment() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

using namespace tl;  // this file is tl-launch's main: the whole runtime is its vocabulary

// A process started by an in-place grow (tl-ctl rescale): gets ready while the job trains, joins
// at a step boundary, and from then on is a member like any other.
int runJoined(comm::ParentLink& lead) {
  using namespace tl;
  spdlog::set_pattern("%H:%M:%S [tl] %v");
  installStopSignal();
  // Resource recording from the join on; its memory floor is taken before the executor is built.
  std::unique_ptr<usage::UsageRecorder> usageRecorder;
  std::unique_ptr<elastic::JoinedProcess> joined;
  try {
    joined = elastic::joinRunningJob(lead, [&](const JobConfig& job) {
      usageRecorder = std::make_unique<usage::UsageRecorder>(launcher::usageOptionsFor(job));
    });
  } catch (const std::exception& e) {
    // Already reported to the lead, which answers the rescale request with it; this process
    // was never a member, so the job goes on without it.
    launcher::printError(kProgram, e.what());
    return 0;
  }
  if (!joined) return 0;
  elastic::ElasticSettings settings;
  settings.offer = joined->offer;
  train::MetricsLog metrics;  // not the lead, unless every process started with the job is lost
  launcher::TrainingProcess process(joined->membership, *usageRecorder, metrics, settings, &gStopRequested);
  int rc = 0;
  try {
    process.startJoined(*joined, lead, gRecovery);
    launcher::TrainingEnding ending;
    ending.resumed = true;
    ending.checkpointDir = joined->offer.checkpointDir;
    rc = process.trainToTheEnd(joined->executor, ending);
  } catch (const std::exception& e) {
    writeCandidateAfter(e);
    throw;
  }
  gRecovery.reset();
  return rc;
}

// What a process started by an in-place grow is offered to join this job: the job with its
// paths made absolute (the newcomer may start elsewhere), and this launch's run settings.
elastic::JoinOffer joinOfferFor(const JobConfig& job, const launcher::LaunchOptions& options) {
  elastic::JoinOffer offer;
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
  return offer;
}

// How this launch rescales: its program, control channel, the slots mpirun gave it and the
// processes it started with.
elastic::ElasticSettings elasticSettingsFor(const launcher::LaunchOptions& options, elastic::JoinOffer offer,
                                            int startedWithTheJob) {
  elastic::ElasticSettings settings;
  settings.program = std::filesystem::read_symlink("/proc/self/exe").string();
  settings.controlBind = options.controlBind == "none" ? "" : options.controlBind;
  settings.controlPort = options.controlPort;
  if (const char* slots = std::getenv("OMPI_UNIVERSE_SIZE")) settings.slots = std::atoi(slots);
  settings.oversubscribe = comm::jobMayOversubscribe();
  settings.startedWithTheJob = startedWithTheJob;
  settings.joinTimeoutSeconds = options.joinTimeoutSeconds;
  settings.offer = std::move(offer);
  return settings;
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
    if (executor->data().trainImages)
      launcher::reportCacheInEpochRecords(metrics, *executor->data().trainImages);
  }
  std::unique_ptr<launcher::CoordinatorTuner> tuner;
  if (job.autoWorkers) {
    tuner = launcher::connectToCoordinator(job, options.coordinatorDir, world->rank(),
                                           executor->data().trainImages
                                               ? executor->data().trainImages->sampleCache()
                                               : nullptr);
    executor->setLoaderTuner(tuner.get());
  }
  elastic::Membership membership;
  membership.useNccl = gpuComm != nullptr;
  membership.deviceIndex = job.deviceIndex;
  membership.host = std::move(world);
  membership.gpu = std::move(gpuComm);
  const elastic::ElasticSettings settings =
      elasticSettingsFor(options, joinOfferFor(job, options), membership.host->size());
  launcher::TrainingProcess process(membership, *usageRecorder, metrics, settings, &gStopRequested);
  // The lead's folder locks die with it; a survivor taking over takes them again (and sweeps the
  // temporaries it left half-written).
  process.setOutputsTakeover([&] { outputs = launcher::prepareOutputs(options); });
  int rc = 0;
  try {
    failed = process.startLaunched(*executor, gRecovery);
    if (failed) return failed;
    launcher::TrainingEnding ending;
    ending.resumed = resumed;
    ending.checkpointDir = options.checkpointDir;
    rc = process.trainToTheEnd(executor, ending);
  } catch (const std::exception& e) {
    // The candidate copies the live replica: written here, while the executor still exists.
    writeCandidateAfter(e);
    throw;
  }
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
  // Under tl-run with in place armed, mpirun exits 0 whatever the statuses: a failing process
  // tells tl-run its status through a file (tl::elastic::noteExitStatus).
  try {
    const int rc = runLaunch(argc, argv);
    noteExitStatus(rc);
    if (tl::elastic::recoveredInPlace()) {
      // The world communicator still has the lost members: MPI_Finalize would wait for them.
      std::fflush(stdout);
      std::fflush(stderr);
      spdlog::default_logger()->flush();
      ::_exit(rc);
    }
    return rc;
  } catch (const tl::JobWideInputError& e) {
    if (e.reports()) tl::launcher::printError(kProgram, e.what());
    noteExitStatus(2);
    tl::comm::MpiSession::abortJob(2);
  } catch (const tl::InputError& e) {
    tl::launcher::printError(kProgram, e.what());
    noteExitStatus(2);
    tl::comm::MpiSession::abortJob(2);
  } catch (const tl::TimeoutError& e) {
    // A hung (or lost) member: this one survives it; tl-run resumes from the copies (written
    // by runLaunch as the error left the training).
    tl::launcher::printError(kProgram, e.what());
    noteExitStatus(1);
    tl::comm::MpiSession::abortJob(1);
  } catch (const std::exception& e) {
    tl::launcher::printError(kProgram, e.what());
    noteExitStatus(1);
    tl::comm::MpiSession::abortJob(1);
  }
}
