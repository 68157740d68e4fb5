#include "tools/submit/mpirun_command.h"

#include <unistd.h>

#include "common/check.h"
#include "common/files.h"
#include "tools/mpirun/mpirun_command.h"
#include "tools/submit/child_process.h"

namespace tl::submit {

std::vector<std::string> tlLaunchFlags(const SubmitJob& job) {
  std::vector<std::string> f;
  if (job.modelFile.empty()) {
    f = {"--model", job.model};
  } else {
    f = {"--model-file", job.modelFile};
    if (!job.modelReturns.empty()) f.insert(f.end(), {"--model-returns", job.modelReturns});
  }
  if (job.depth > 0) f.insert(f.end(), {"--depth", std::to_string(job.depth)});
  f.insert(f.end(), {"--batch", std::to_string(job.batch)});
  f.insert(f.end(), {"--workers", job.autoWorkers ? "auto" : std::to_string(job.workers)});
  f.insert(f.end(), {"--output-dir", job.outputFolder});
  if (job.logicalWorkers > 0)
    f.insert(f.end(), {"--logical-workers", std::to_string(job.logicalWorkers)});
  if (!job.dataset.empty()) f.insert(f.end(), {"--dataset", job.dataset});
  if (!job.dataDir.empty()) f.insert(f.end(), {"--data-dir", job.dataDir});
  if (job.steps >= 0) f.insert(f.end(), {"--steps", std::to_string(job.steps)});
  if (job.epochs >= 0) f.insert(f.end(), {"--epochs", std::to_string(job.epochs)});
  if (!job.device.empty()) f.insert(f.end(), {"--device", job.device});
  if (job.lr >= 0) f.insert(f.end(), {"--lr", tl::str(job.lr)});
  if (job.seed >= 0) f.insert(f.end(), {"--seed", std::to_string(job.seed)});
  f.insert(f.end(), job.extraFlags.begin(), job.extraFlags.end());
  return f;
}

std::vector<std::string> mpirunArgv(const MpirunOptions& options, int processes, int port,
                                    bool exportCudaDevices,
                                    const std::vector<std::string>& launchFlags) {
  mpirun::LaunchCommand c;
  c.mpirun = options.mpirun;
  c.oversubscribe = options.oversubscribe;
  c.allowRunAsRoot = options.allowRunAsRoot;
  c.bindTo = options.bindTo;
  c.processes = processes;
  if (port > 0) {
    // The job's ranks listen for TCP peers only in [port, port + range): concurrent jobs with
    // disjoint ranges cannot race for the same port, and firewalls can open exactly these.
    c.mca = {{"btl_tcp_port_min_v4", std::to_string(port)},
             {"btl_tcp_port_range_v4", std::to_string(options.portRange)}};
  }
  if (exportCudaDevices) c.exportEnv.push_back("CUDA_VISIBLE_DEVICES");
  c.extraArgs = options.extraMpiArgs;
  c.tlLaunch = options.tlLaunch;
  c.launchFlags = launchFlags;
  return mpirun::argvOf(c);
}

std::vector<std::string> jobLaunchFlags(const MpirunOptions& options, const SubmitJob& job) {
  std::vector<std::string> flags = tlLaunchFlags(job);
  if (job.autoWorkers)
    flags.insert(flags.end(), options.autoWorkersFlags.begin(), options.autoWorkersFlags.end());
  return flags;
}

JobCommand jobCommand(const MpirunOptions& options, const SubmitJob& job) {
  JobCommand out;
  const bool cuda = !job.cudaDevices.empty();
  out.argv = mpirunArgv(options, job.processes, job.port, cuda, jobLaunchFlags(options, job));
  if (cuda) out.setEnv["CUDA_VISIBLE_DEVICES"] = job.cudaVisibleDevices();
  return out;
}

MpirunOptions defaultMpirunOptions() {
  MpirunOptions o;
  o.tlLaunch = joinPath(executableDir(), "tl-launch");
  o.allowRunAsRoot = ::geteuid() == 0;
  return o;
}

}  // namespace tl::submit
