#include "launcher/training_process.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/check.h"
#include "common/files.h"
#include "elastic/recovery/in_place.h"
#include "launcher/cache_metrics.h"
#include "launcher/cpu_kernels.h"
#include "launcher/job_errors.h"
#include "runtime/comm/collective_timeout.h"
#include "runtime/comm/json_collectives.h"
#include "runtime/models/state_dict_io.h"
#include "runtime/models/torchscript_model.h"
#include "runtime/train/summary.h"
#include "runtime/train/trainer_result.h"

// libtorch's CUDA caching allocator, when this libtorch has one (a CPU-only libtorch does not:
// the weak reference is then null).
namespace c10::cuda::CUDACachingAllocator {
__attribute__((weak)) void emptyCache();
}

namespace tl::launcher {
namespace {

constexpr const char* kLauncherName = "tl-launch";

void releaseCachedDeviceMemory() {
  if (&c10::cuda::CUDACachingAllocator::emptyCache != nullptr) c10::cuda::CUDACachingAllocator::emptyCache();
}

// A process that left the job by an in-place shrink has no more work for it: its teardown
// (freeing the replica, ending its threads) and its wait for the job's end go at the lowest CPU
// priority, so that they do not slow the first steps of the members that go on. Linux keeps a
// nice value per thread: every thread of the process is lowered.
void yieldTheCpuToTheJob() {
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const long tid = std::atol(task.path().filename().c_str());
    if (tid > 0) ::setpriority(PRIO_PROCESS, id_t(tid), 19);
  }
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

PeakMemory peakMemory(comm::Communicator& world) {
  const double mine = ownPeakRssMb();
  at::Tensor v = at::full({1}, mine, at::kDouble);
  at::Tensor m = v.clone();
  world.allreduce(v, comm::ReduceOp::Sum);
  world.allreduce(m, comm::ReduceOp::Max);
  return {m.item<double>(), v.item<double>()};
}

// --skip-corrupt: how many distinct files the job replaced (a file met by several processes
// counts once).
int64_t corruptFilesSkipped(comm::Communicator& world, const std::vector<int64_t>& mine) {
  std::set<int64_t> files;
  for (const nlohmann::json& theirs : comm::allgatherJson(world, mine)) {
    for (const nlohmann::json& file : theirs) files.insert(file.get<int64_t>());
  }
  return int64_t(files.size());
}

// The CPU kernel classes the job's processes ran (launcher/cpu_kernels.h): one class, or, where
// they differ, each with its ranks ("avx512 (ranks 0, 1), avx2 (rank 2)"). Every member takes part.
struct CpuKernelClasses {
  std::string text;
  bool mixed = false;
};

CpuKernelClasses cpuKernelsOfTheJob(comm::Communicator& world) {
  std::vector<std::pair<std::string, std::vector<int>>> classes;
  const auto all = comm::allgatherJson(world, cpuKernels());
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string kind = all[r].get<std::string>();
    auto it = std::find_if(classes.begin(), classes.end(),
                           [&](const auto& c) { return c.first == kind; });
    if (it == classes.end()) it = classes.insert(classes.end(), {kind, {}});
    it->second.push_back(int(r));
  }
  if (classes.size() == 1) return {classes[0].first, false};
  std::string out;
  for (const auto& [kind, ranks] : classes) {
    out += (out.empty() ? "" : ", ") + kind + (ranks.size() == 1 ? " (rank " : " (ranks ");
    for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
    out += ")";
  }
  return {out, true};
}

}  // namespace

elastic::CheckpointPolicyOptions policyOptions(const elastic::JoinOffer& o, const std::atomic<bool>* stopRequested) {
  elastic::CheckpointPolicyOptions po;
  po.dir = o.checkpointDir;
  po.every = o.checkpointEvery;
  po.stopAtStep = o.stopAtStep;
  po.stopRequested = stopRequested;
  return po;
}

TrainingProcess::TrainingProcess(elastic::Membership& membership, usage::UsageRecorder& recorder,
                                 train::MetricsLog& metrics, elastic::ElasticSettings settings,
                                 const std::atomic<bool>* stopRequested)
    : membership_(membership),
      recorder_(recorder),
      metrics_(metrics),
      lead_(membership.host->rank() == 0),
      policy_(policyOptions(settings.offer, stopRequested)),
      recording_(recorder, metrics, /*startedByGrow=*/!membership.startedWithTheJob),
      controller_(membership, policy_, settings, lead_ ? &metrics : nullptr),
      placer_(settings.offer.autoPlacement, lead_ ? &metrics : nullptr) {
  membership_.recorder = &recording_;
  controller_.setAutoPlacer(&placer_);
}

TrainingProcess::~TrainingProcess() = default;

namespace {

std::vector<elastic::Member> recoveryMembers(const elastic::MemberList& list) {
  std::vector<elastic::Member> members;
  for (size_t r = 0; r < list.hosts.size() && r < list.pids.size(); ++r)
    members.push_back({int(r), list.hosts[r], list.pids[r]});
  return members;
}

}  // namespace

bool inPlaceArmed() {
  const char* v = std::getenv(elastic::kInPlaceEnv);
  return v != nullptr && std::string(v) == "1";
}

int TrainingProcess::startLaunched(est::EstExecutor& executor, std::unique_ptr<elastic::RecoveryGuard>& recovery) {
  const elastic::JoinOffer& offer = controller_.offer();
  executor.setEmulatedSlowdown(offer.autoPlacement.slowdownFor(membership_.host->rank(), executor.stepsDone()));
  controller_.startControl(executor);
  if (offer.recoveryDir.empty()) return 0;
  const int failed = prepareOnAllRanks(executor.comm(), kLauncherName, [&] {
    recovery = std::make_unique<elastic::RecoveryGuard>(offer.recoveryDir, controller_, executor);
  });
  if (failed) return failed;
  recovery_ = recovery.get();
  recovery_->setMetrics(lead_ ? &metrics_ : nullptr);
  recovery_->start(executor);
  recovery_->watchTermination();
  if (inPlaceArmed()) recovery_->watchMembers();
  followMembers();
  if (lead_) recovery_->setStatusSink([this](const nlohmann::json& c) { controller_.annotateStatus("recovery", c); });
  return 0;
}

void TrainingProcess::startJoined(elastic::JoinedProcess& joined, comm::ParentLink& lead,
                                  std::unique_ptr<elastic::RecoveryGuard>& recovery) {
  controller_.apply(joined.command, *joined.executor, &lead);
  joined.retired.clear();
  recording_.joinedAt(joined.executor->stepsDone());
  if (joined.offer.recoveryDir.empty()) return;
  recovery = std::make_unique<elastic::RecoveryGuard>(joined.offer.recoveryDir, controller_, *joined.executor);
  recovery_ = recovery.get();
  recovery_->watchTermination();
  followMembers();
  recovery_->setMembers(recoveryMembers(controller_.members()));  // as of the join
  if (inPlaceArmed()) recovery_->watchMembers();
}

// The guard's member table follows in-place rescales: tl-run names a lost process started by a
// grow, and can end it on its host when it hangs.
void TrainingProcess::followMembers() {
  controller_.onMembersChanged([this](const elastic::MemberList& list) {
    if (recovery_) recovery_->setMembers(recoveryMembers(list));
  });
}

est::StepObserver& TrainingProcess::boundaryHooks() {
  est::StepObserver* inner = recovery_ ? static_cast<est::StepObserver*>(recovery_) : &controller_;
  usageObserver_ = std::make_unique<UsageObserver>(inner, recording_);
  return *usageObserver_;
}

// Under tl-run with in place armed, after members were lost: the survivors go on in their
// processes (or, when that cannot work, this process writes its copy for a restart and exits).
void TrainingProcess::recoverInPlace(est::EstExecutor& executor) {
  const elastic::WentOnInPlace went = elastic::recoverInPlace(
      *recovery_, *membership_.host, executor,
      [this](elastic::SurvivorCommunicators survivors) -> elastic::ExecutorCommunicators {
        // The old communicators are never freed: MPI_Comm_free would wait for their lost
        // members, and the old NCCL one (aborted) may still be named by the executor's
        // unfinished collectives until recoverOnSurvivors.
        (void)membership_.host.release();
        membership_.host = std::move(survivors.host);
        if (survivors.gpu) {
          (void)membership_.gpu.release();
          membership_.gpu = std::move(survivors.gpu);
        }
        return {membership_.forExecutor(*membership_.host), membership_.forExecutor(membership_.device())};
      },
      elastic::JobNccl{membership_.gpu.get(), membership_.deviceIndex});
  controller_.survivorsWentOn(executor);
  afterInPlaceRecovery(executor, went.boundary, went.leadLost());
}

void TrainingProcess::afterInPlaceRecovery(est::EstExecutor& executor, int64_t boundary, bool leadLost) {
  // The boundary's step record, from a survivor that made it.
  std::string boundaryRecord;
  for (const nlohmann::json& made : comm::allgatherJson(executor.comm(), metrics_.lastStepRecord())) {
    const nlohmann::json r = nlohmann::json::parse(made.get<std::string>(), nullptr, false);
    if (r.is_object() && r.value("step", int64_t(-1)) == boundary) boundaryRecord = r.dump();
  }
  if (executor.comm().rank() != 0) return;
  if (leadLost) takeOverLead(executor, boundary);
  if (!boundaryRecord.empty() && metrics_.lastStepLogged() < boundary) metrics_.write(nlohmann::json::parse(boundaryRecord));
}

void TrainingProcess::takeOverLead(est::EstExecutor& executor, int64_t boundary) {
  lead_ = true;
  if (!takeOutputs_) {
    spdlog::warn("taking over from the lost lead: this process was started by a grow and does not lock the job's "
                 "folders again");
  } else {
    try {
      takeOutputs_();
    } catch (const std::exception& e) {
      spdlog::warn("taking over from the lost lead: the job's folders could not be locked again: {}", e.what());
    }
  }
  const std::string outputDir = executor.config().outputDir;
  if (!outputDir.empty()) {
    metrics_ = train::MetricsLog::continuing(joinPath(outputDir, "metrics.jsonl"));
    if (executor.data().trainImages) reportCacheInEpochRecords(metrics_, *executor.data().trainImages);
  }
  controller_.takeOverLead(executor, &metrics_);
  placer_.setMetrics(&metrics_);
  if (recovery_) {
    recovery_->setMetrics(&metrics_);
    recovery_->setStatusSink([this](const nlohmann::json& c) { controller_.annotateStatus("recovery", c); });
  }
  spdlog::info("the lead (rank 0) was lost: this process (pid {}) takes over its duties from step {}", ::getpid(),
               boundary);
}

int TrainingProcess::trainToTheEnd(std::unique_ptr<est::EstExecutor>& owned, const TrainingEnding& ending) {
  est::EstExecutor& executor = *owned;
  est::StepObserver& hooks = boundaryHooks();
  recorder_.start();
  train::TrainResult result;
  for (;;) {
    try {
      result = executor.run(metrics_, &hooks);
      break;
    } catch (const comm::MembersLost&) {
      if (!recovery_ || !inPlaceArmed()) throw;
      recoverInPlace(executor);
    } catch (const comm::CollectiveTimeout& timeout) {
      // The hang timeout: a member stopped on this host is ended, and the others go on in place
      // as after a kill; anything else takes the restart path (tl-launch's main writes the copy).
      if (!recovery_ || !inPlaceArmed() || !recovery_->endHungMembers(timeout.absentRanks())) throw;
      recoverInPlace(executor);
    }
  }
  controller_.finish(policy_.stopped() ? "the job stopped" : "the job has finished");
  if (!executor.inJob()) {
    yieldTheCpuToTheJob();
    if (recovery_) recovery_->leave();
    recorder_.finish();  // its figures went to the lead as it left
    spdlog::info("this process left the job after step {}", executor.stepsDone());
    // It may have to wait for the job's end (mpirun's own processes finalize together): it
    // gives back its memory and, on a GPU, the device memory libtorch keeps cached.
    const bool cuda = executor.config().device.isCuda();
    owned.reset();
    if (cuda) releaseCachedDeviceMemory();
    return 0;
  }
  comm::Communicator& host = executor.comm();
  const PeakMemory memory = peakMemory(host);
  const int64_t corruptFiles = corruptFilesSkipped(host, result.corruptSamples);
  const nlohmann::json usagePerProcess = recording_.gather(host);
  const bool onCpu = !executor.config().device.isCuda();
  const CpuKernelClasses cpuKernelClasses = onCpu ? cpuKernelsOfTheJob(host) : CpuKernelClasses{};
  const nlohmann::json usage = recorder_.finish();
  const JobConfig& job = executor.config();
  if (lead_) {
    train::RunInfo info;
    info.processes = host.size();
    info.logicalWorkers = executor.placement().logicalWorkers();
    info.placement = executor.placement().toString();
    auto summary = train::summaryJson(result, job, info);
    summary["resumed"] = ending.resumed;
    summary["stopped_at_checkpoint"] = policy_.stopped();
    summary["total_steps"] = executor.plan().totalSteps;
    summary["peak_rss_mb"] = memory.maxMb;
    summary["peak_rss_mb_sum"] = memory.sumMb;
    summary["corrupt_files_skipped"] = corruptFiles;
    if (onCpu) {
      // Part of a CPU job's bits, as the libtorch version and --compute-threads are.
      summary["cpu_kernels"] = cpuKernelClasses.text;
      if (cpuKernelClasses.mixed)
        spdlog::warn(
            "the processes ran different CPU kernels ({}): this job's bits depend on its "
            "placement; "
            "export DNNL_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 to every process (mpirun -x) "
            "for one set",
            cpuKernelClasses.text);
    }
    summary["usage"] = usage;
    summary["usage_processes"] = usagePerProcess;
    summary["inplace_rescales"] = controller_.rescales();
    summary["inplace_rescale_max_pause_s"] = controller_.maxPauseSeconds();
    if (recovery_) summary["recovery"] = recovery_->counts();
    placer_.addToSummary(summary);
    if (job.emulateStorageMbps > 0) {  // timing only, like --emulate-slowdown
      summary["emulated"] = true;
      summary["emulated_storage_mbps"] = job.emulateStorageMbps;
    }
    if (!job.outputDir.empty()) train::writeSummary(summary, job.outputDir);
    if (!job.saveModel.empty()) {
      models::saveStateDict(executor.model(), job.saveModel);
      models::saveTorchScript(executor.model(), models::torchScriptSavePath(job.saveModel));  // --model-file
    }
    spdlog::info("{} {} steps in {:.1f} s, {:.1f} images/s, final loss {:.4f}{}",
                 policy_.stopped() ? "stopped after" : "done:", result.stepsThisRun, result.wallSeconds,
                 result.imagesPerSecond, result.finalLoss,
                 !result.evaluated  ? std::string()
                 : result.hasAccuracy ? tl::str(", test accuracy ", result.testAccuracy * 100, "%")
                 : result.hasPerplexity
                     ? tl::str(", test loss ", result.testLoss, ", perplexity ", std::exp(result.testLoss))
                     : tl::str(", test loss ", result.testLoss));
    spdlog::info("params_sha256 {}", result.paramsSha256);
    if (policy_.stopped() && !ending.checkpointDir.empty()) {
      std::printf(
          "%s: checkpoint at step %lld written to %s; continue with: mpirun -np P %s --resume %s\n",
          kLauncherName, (long long)result.steps, ending.checkpointDir.c_str(), kLauncherName,
          ending.checkpointDir.c_str());
    } else if (policy_.stopped()) {
      std::printf(
          "%s: stop requested, but no --checkpoint-dir or --output-dir: stopped without a "
          "checkpoint\n",
          kLauncherName);
    }
    std::fflush(stdout);
  }
  host.barrier();
  return 0;
}

}  // namespace tl::launcher
