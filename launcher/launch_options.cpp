#include "launcher/launch_options.h"

#include <torch/cuda.h>

#include <algorithm>

#include "common/check.h"
#include "common/cli/cli.h"
#include "launcher/job_flags.h"
#include "runtime/comm/nccl/nccl_communicator.h"
#include "runtime/train/trainer_result.h"

namespace tl::launcher {
namespace {

constexpr const char* kSummary =
    "Trains one data-parallel job; run it as `mpirun -np P tl-launch ...`, one process per device.";

// Applies `args` on top of `base` through the flag table. CLI11 does the syntax (--name value,
// --name=value, switches, --help); the table converts and checks each value.
LaunchOptions applyFlags(const std::vector<std::string>& args, LaunchOptions base) {
  const LaunchOptions defaults;
  auto app = cli::makeApp("tl-launch", kSummary);
  std::vector<std::pair<const LaunchFlag*, CLI::Option*>> options;
  for (const LaunchFlag& flag : launchFlags()) {
    std::string help = flag.help;
    if (flag.role == FlagRole::Defining) help += " {defines the job}";
    // (CLI11's two-argument add_option binds a variable: the help goes in description().)
    CLI::Option* opt = flag.isSwitch ? app->add_flag("--" + flag.name) : app->add_option("--" + flag.name);
    opt->description(help);
    if (!flag.isSwitch) opt->type_name("VALUE")->default_str(flag.show(defaults));
    options.emplace_back(&flag, opt);
  }
  if (!cli::parse(*app, args, &base.usage)) {
    base.help = true;
    return base;
  }
  for (auto& [flag, opt] : options) {
    if (opt->count() == 0) continue;
    const std::string value = opt->results().empty() ? "" : opt->results().front();
    if (flag->isSwitch) {
      TL_REQUIRE(value.empty() || value == "true", "--", flag->name, ": takes no value, got '", value, "'");
    }
    flag->set(base, value);
    base.given.insert(flag->name);
  }
  return base;
}

bool given(const LaunchOptions& o, const char* flag) { return o.given.count(flag) > 0; }

// Defaults of this launch that follow from other flags, and checks across flags.
void finishLaunchSettings(LaunchOptions& o) {
  if (o.checkpointDir.empty()) {
    if (!o.resume.empty()) o.checkpointDir = o.resume;
    else if (!o.job.outputDir.empty()) o.checkpointDir = o.job.outputDir + "/checkpoint";
  }
  TL_REQUIRE(o.checkpointEvery == 0 || !o.checkpointDir.empty(),
             "--checkpoint-every needs --checkpoint-dir or --output-dir");
  TL_REQUIRE(o.stopAtStep == 0 || !o.checkpointDir.empty(),
             "--stop-at-step needs --checkpoint-dir or --output-dir (it writes a checkpoint)");
}

}  // namespace

LaunchOptions parseLaunchOptions(const std::vector<std::string>& args) {
  LaunchOptions o = applyFlags(args, LaunchOptions{});
  if (o.help) return o;
  finishLaunchSettings(o);
  if (!o.resume.empty()) return o;  // the rest is checked against the checkpoint's job
  JobConfig& j = o.job;
  TL_REQUIRE(!(given(o, "epochs") && given(o, "steps")), "give --epochs or --steps, not both");
  if (!given(o, "epochs") && !given(o, "steps")) j.epochs = 1;
  if (!given(o, "data-dir") && j.dataset == "fashion-mnist") j.dataDir = kFashionMnistDir;
  TL_REQUIRE(!given(o, "model") || !given(o, "model-file"), "give --model or --model-file, not both");
  TL_REQUIRE(j.model.arch != "resnet" || given(o, "depth"),
             "--model resnet needs --depth (6n+2: 20, 32, 44, 56, 110)");
  TL_REQUIRE(j.model.arch == "resnet" || !given(o, "depth"), "--depth applies to --model resnet only");
  validate(j);
  return o;
}

LaunchOptions parseResumeOptions(const std::vector<std::string>& args, const JobConfig& saved) {
  LaunchOptions base;
  base.job = saved;
  base.job.saveModel.clear();  // an output of one launch, not of the job
  LaunchOptions o = applyFlags(args, base);
  if (o.help) return o;
  finishLaunchSettings(o);
  std::string conflicts;
  for (const LaunchFlag& flag : launchFlags()) {
    if (flag.role != FlagRole::Defining || !given(o, flag.name.c_str())) continue;
    const std::string asked = flag.show(o), kept = flag.show(base);
    if (asked != kept) conflicts += tl::str("\n  --", flag.name, " ", asked, " (the checkpoint's job has ", kept, ")");
  }
  if (!conflicts.empty()) {
    inputError("--resume '", o.resume, "': these flags would change the job's definition, which a resumed "
               "job keeps (give them as before, or leave them out):", conflicts);
  }
  validate(o.job);
  return o;
}

ProcessJob jobForProcess(const LaunchOptions& options, int processes, int localRank) {
  JobConfig job = options.job;
  job.deviceIndex = localRank;
  if (job.logicalWorkers == 0) job.logicalWorkers = processes;
  options.autoPlacement.checkProcesses(processes);
  est::Placement placement = options.placement.empty()
                                 ? est::Placement::even(job.logicalWorkers, processes)
                                 : est::Placement::explicitCounts(options.placement, job.logicalWorkers, processes);
  if (job.device.isCuda() && options.gpuComm == "mpi")
    job.deviceIndex %= std::max<int>(1, int(torch::cuda::device_count()));
  if (job.device.isCuda() && options.gpuComm == "nccl" && torch::cuda::is_available() &&
      job.deviceIndex >= int(torch::cuda::device_count())) {
    inputError("--device cuda with --gpu-comm nccl (the default) gives each process on a host its own GPU: local "
               "rank ", job.deviceIndex, " has none, only ", torch::cuda::device_count(),
               " are visible (run at most that many processes per host, or let them share the GPUs with "
               "--gpu-comm mpi)");
  }
  train::resolveDevice(job);
  TL_REQUIRE(!job.device.isCuda() || options.gpuComm != "nccl" || comm::ncclAvailable(),
             "--device cuda: this tl was built without NCCL (configure with -DTL_WITH_NCCL=ON, "
             "or use --gpu-comm mpi)");
  return {std::move(job), std::move(placement)};
}

}  // namespace tl::launcher
