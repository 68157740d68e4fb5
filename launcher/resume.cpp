#include "launcher/resume.h"

#include <functional>
#include <sstream>

#include "common/check.h"

namespace tl::launcher {
namespace {

// A flag that is part of the job's definition, and how to show its value.
struct DefiningFlag {
  const char* flag;
  std::function<std::string(const JobConfig&)> value;
};

template <typename T>
std::string show(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

const std::vector<DefiningFlag>& definingFlags() {
  static const std::vector<DefiningFlag> flags = {
      {"model", [](const JobConfig& c) { return c.model.arch; }},
      {"depth", [](const JobConfig& c) { return show(c.model.depth); }},
      {"no-batchnorm", [](const JobConfig& c) { return show(!c.model.batchNorm); }},
      {"dropout", [](const JobConfig& c) { return show(c.model.dropout); }},
      {"dataset", [](const JobConfig& c) { return c.dataset; }},
      {"augment", [](const JobConfig& c) { return std::string(c.augment ? "on" : "off"); }},
      {"image-size", [](const JobConfig& c) { return show(imageFolderSize(c)); }},
      {"skip-corrupt", [](const JobConfig& c) { return show(c.skipCorrupt); }},
      {"drop-last", [](const JobConfig& c) { return show(c.dropLastBatch); }},
      {"batch", [](const JobConfig& c) { return show(c.batch); }},
      {"epochs", [](const JobConfig& c) { return show(c.epochs); }},
      {"steps", [](const JobConfig& c) { return show(c.steps); }},
      {"optimizer", [](const JobConfig& c) { return c.optimizer.name; }},
      {"lr", [](const JobConfig& c) { return show(c.optimizer.lr); }},
      {"momentum", [](const JobConfig& c) { return show(c.optimizer.momentum); }},
      {"weight-decay", [](const JobConfig& c) { return show(c.optimizer.weightDecay); }},
      {"beta1", [](const JobConfig& c) { return show(c.optimizer.beta1); }},
      {"beta2", [](const JobConfig& c) { return show(c.optimizer.beta2); }},
      {"rho", [](const JobConfig& c) { return show(c.optimizer.rho); }},
      {"lr-schedule", [](const JobConfig& c) { return c.schedule.kind; }},
      {"lr-step-epochs", [](const JobConfig& c) { return show(c.schedule.stepEpochs); }},
      {"lr-gamma", [](const JobConfig& c) { return show(c.schedule.gamma); }},
      {"warmup-epochs", [](const JobConfig& c) { return show(c.schedule.warmupEpochs); }},
      {"min-lr", [](const JobConfig& c) { return show(c.schedule.minLr); }},
      {"seed", [](const JobConfig& c) { return show(c.seed); }},
      {"compute-threads", [](const JobConfig& c) { return show(c.computeThreads); }},
      {"reduction", [](const JobConfig& c) { return c.reduction; }},
  };
  return flags;
}

}  // namespace

JobConfig resumedConfig(const JobConfig& saved, int savedLogicalWorkers, const LaunchOptions& cli) {
  std::string conflicts;
  auto conflict = [&](const std::string& flag, const std::string& asked, const std::string& kept) {
    conflicts += tl::str("\n  --", flag, " ", asked, " (the checkpoint's job has ", kept, ")");
  };
  if (cli.given.count("logical-workers") && cli.logicalWorkers != savedLogicalWorkers) {
    conflict("logical-workers", std::to_string(cli.logicalWorkers), std::to_string(savedLogicalWorkers));
  }
  for (const auto& d : definingFlags()) {
    if (!cli.given.count(d.flag)) continue;
    std::string asked = d.value(cli.job), kept = d.value(saved);
    if (asked != kept) conflict(d.flag, asked, kept);
  }
  if (!conflicts.empty()) {
    inputError("--resume '", cli.resume, "': these flags would change the job's definition, which a resumed "
               "job keeps (give them as before, or leave them out):", conflicts);
  }
  JobConfig c = saved;
  // How and where it runs may change with the new launch.
  const JobConfig& now = cli.job;
  if (cli.given.count("workers")) {
    c.workers = now.workers;
    c.autoWorkers = now.autoWorkers;
  }
  if (cli.given.count("prefetch")) c.prefetch = now.prefetch;
  if (cli.given.count("data-dir")) c.dataDir = now.dataDir;
  if (cli.given.count("output-dir")) c.outputDir = now.outputDir;
  if (cli.given.count("eval")) c.eval = now.eval;
  if (cli.given.count("log-every")) c.logEvery = now.logEvery;
  if (cli.given.count("device")) c.device = now.device;
  if (cli.given.count("bucket-mb")) c.bucketBytes = now.bucketBytes;
  c.saveModel = now.saveModel;
  c.deviceIndex = now.deviceIndex;
  validate(c);
  return c;
}

}  // namespace tl::launcher
