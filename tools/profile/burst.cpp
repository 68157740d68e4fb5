#include "tools/profile/burst.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/check.h"
#include "common/files.h"
#include "tools/submit/child_process.h"
#include "tools/submit/launch_check.h"

namespace tl::profile {
namespace {

struct StepRecord {
  int64_t epoch = 0;
  double dataWait = 0;  // cumulative within the epoch
  double time = 0;      // wall clock when the step ended
};

std::vector<StepRecord> readStepRecords(const std::string& path) {
  std::vector<StepRecord> steps;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || j.value("type", "") != "step" || !j.contains("time")) continue;
    steps.push_back(
        {j.value("epoch", int64_t(0)), j.value("data_wait_s", 0.0), j["time"].get<double>()});
  }
  return steps;
}

// The steps after the warm-up: from the end of the last warm-up step to the end of the run.
struct SteadyWindow {
  bool valid = false;
  int64_t steps = 0;
  double seconds = 0, waitSeconds = 0;
};

SteadyWindow windowAfterWarmup(const std::vector<StepRecord>& steps, int warmupSteps) {
  SteadyWindow w;
  if (warmupSteps < 1 || int(steps.size()) <= warmupSteps) return w;
  const size_t first = size_t(warmupSteps - 1);
  w.seconds = steps.back().time - steps[first].time;
  w.steps = int64_t(steps.size() - 1 - first);
  for (size_t i = first + 1; i < steps.size(); ++i) {
    bool sameEpoch = steps[i].epoch == steps[i - 1].epoch;  // data_wait_s restarts with an epoch
    w.waitSeconds += sameEpoch ? steps[i].dataWait - steps[i - 1].dataWait : steps[i].dataWait;
  }
  w.valid = w.seconds > 0;
  return w;
}

// The steps of the first epoch when a later epoch has begun (so the first is known to be
// whole), else 0.
int64_t firstEpochSteps(const std::vector<StepRecord>& steps) {
  for (size_t i = 1; i < steps.size(); ++i) {
    if (steps[i].epoch != steps[0].epoch) return int64_t(i);
  }
  return 0;
}

int leadingCount(const std::string& placement, int fallback) {
  try {
    return std::max(1, std::stoi(placement.substr(0, placement.find(','))));
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace

const std::vector<std::string>& burstOwnedFlags() {
  static const std::vector<std::string> flags = {"--steps", "--epochs", "--workers", "--output-dir",
                                                 "--resume"};
  return flags;
}

BurstMeasurement readBurst(const std::string& folder, int workers, int warmupSteps,
                           bool skipFirstEpoch) {
  BurstMeasurement m;
  m.workers = workers;
  m.exitCode = 0;
  nlohmann::json s;
  try {
    s = nlohmann::json::parse(readFile(joinPath(folder, "summary.json")));
  } catch (const std::exception& e) {
    m.note = e.what();
    m.exitCode = -1;
    return m;
  }
  const int logical = s.value("logical_workers", 1);
  const int rankZeroEsts = leadingCount(s.value("placement", std::string()), 1);
  m.jobPerProcessRatio = double(logical) / rankZeroEsts;
  const int64_t batch = s.contains("config") ? s["config"].value("batch", int64_t(0)) : 0;
  const int64_t steps = s.value("steps", int64_t(0));

  const std::vector<StepRecord> records = readStepRecords(joinPath(folder, "metrics.jsonl"));
  m.firstEpochSteps = firstEpochSteps(records);
  if (skipFirstEpoch && m.firstEpochSteps > 0 && m.firstEpochSteps < int64_t(records.size()) - 1) {
    warmupSteps = std::max(warmupSteps, int(m.firstEpochSteps));
    m.warm = true;
  }
  const SteadyWindow steady = windowAfterWarmup(records, warmupSteps);
  m.warm = m.warm && steady.valid && batch > 0;
  if (steady.valid && batch > 0) {
    m.imagesPerSecond = double(steady.steps * batch * logical) / steady.seconds;
    m.waitShare = std::clamp(steady.waitSeconds / steady.seconds, 0.0, 1.0);
    m.warmupExcluded = true;
  } else {
    m.imagesPerSecond = s.value("images_per_s", 0.0);
    double wall = s.value("wall_time_s", 0.0);
    double wait = s.value("data_wait_s", -1.0);
    if (wait < 0) {  // older summaries: the epoch records have it
      wait = 0;
      for (const auto& e : s.value("epochs", nlohmann::json::array()))
        wait += e.value("data_wait_s", 0.0);
    }
    m.waitShare = wall > 0 ? std::clamp(wait / wall, 0.0, 1.0) : 0;
  }
  if (s.contains("loader") && s.contains("compute_s") && s["loader"].is_object()) {
    const auto& l = s["loader"];
    m.loader.workers = l.value("workers", workers);
    m.loader.busySeconds = l.value("busy_s", 0.0);
    m.loader.images = l.value("images", int64_t(0));
    if (steady.valid && batch > 0) {
      // The device's rate when never starved: the steady window's time not spent waiting for
      // data. Unlike compute_s it leaves out the slow first steps and includes what every
      // step costs besides forward and backward (reduction, optimizer), as the job pays it.
      m.compute.computeSeconds = steady.seconds - steady.waitSeconds;
      m.compute.images = steady.steps * batch * rankZeroEsts;
    } else {
      m.compute.computeSeconds = s["compute_s"].get<double>();
      m.compute.images = steps * batch * rankZeroEsts;
    }
    m.hasLoaderMeasurement = m.loader.workers > 0 && m.loader.busySeconds > 0 &&
                             m.loader.images > 0 && m.compute.computeSeconds > 0 &&
                             m.compute.images > 0;
  }
  return m;
}

std::vector<std::string> burstLaunchFlags(const BurstSpec& spec, int workers,
                                          const std::string& folder) {
  std::vector<std::string> flags = spec.jobFlags;
  flags.insert(flags.end(), {"--steps", std::to_string(spec.steps), "--workers",
                             std::to_string(workers), "--output-dir", folder});
  return flags;
}

BurstMeasurement runBurst(const BurstSpec& spec, int workers, const std::string& folder) {
  std::filesystem::create_directories(folder);
  std::filesystem::remove(joinPath(folder, "summary.json"));
  std::vector<std::string> argv;
  if (!spec.cpus.empty()) argv = {"taskset", "-c", spec.cpus};
  auto mpirun = submit::mpirunArgv(spec.mpirun, spec.processes, 0, false,
                                   burstLaunchFlags(spec, workers, folder));
  argv.insert(argv.end(), mpirun.begin(), mpirun.end());
  std::string log = joinPath(folder, "job.log");
  pid_t pid = submit::startChild({argv, {}, log});
  int forwarded = spec.interrupts();
  submit::ChildExit exit;
  while (!(exit = submit::pollChild(pid)).exited) {
    for (int seen = spec.interrupts(); forwarded < seen; ++forwarded) ::kill(pid, SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (exit.exitCode != 0) {
    BurstMeasurement failed;
    failed.workers = workers;
    failed.exitCode = exit.exitCode;
    const std::string error = submit::errorLineOfLog(log);
    failed.note = tl::str("exit status ", exit.exitCode, error.empty() ? "" : ": " + error,
                          " (see ", log, ")");
    return failed;
  }
  return readBurst(folder, workers, spec.warmupSteps, spec.skipFirstEpoch);
}

}  // namespace tl::profile
