#include "tools/run/supervisor.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <type_traits>

#include "common/check.h"
#include "common/clock.h"
#include "common/files.h"
#include "tools/run/mpirun_watch.h"

namespace tl::run {
namespace fs = std::filesystem;
namespace {

using elastic::Candidate;
using elastic::FailureRecord;
using elastic::FailureReport;
using json = nlohmann::json;

template <typename T>
std::string joined(const std::vector<T>& v) {
  std::string s;
  for (const T& x : v) {
    if (!s.empty()) s += ",";
    if constexpr (std::is_same_v<T, std::string>) s += x;
    else s += std::to_string(x);
  }
  return s;
}

// What one supervised run knows between its launches.
struct Run {
  const SupervisorOptions& o;
  std::string outputDir;
  std::string checkpointDir;
  elastic::RecoveryPaths paths;
  elastic::RecoveryHistory history;
  std::string kept;  // the newest copy moved out of candidates/
  LaunchPlan plan;
  int64_t resumedFrom() const { return history.failures.empty() ? 0 : history.failures.back().boundaryStep; }
};

// The last step the job's metrics record (-1: none), to tell a launch lost before its first
// step from one whose progress no copy kept.
int64_t lastLoggedStep(const std::string& outputDir) {
  std::ifstream in(outputDir + "/metrics.jsonl");
  int64_t last = -1;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"step\"") == std::string::npos) continue;
    try {
      last = std::max(last, json::parse(line).value("step", int64_t(-1)));
    } catch (const json::exception&) {
    }
  }
  return last;
}

// A record of a loss the job will not recover from (no launch is running: nobody else writes).
void appendMetrics(const std::string& outputDir, json record) {
  record["type"] = "failure";
  record["recovered"] = false;
  std::ofstream out(outputDir + "/metrics.jsonl", std::ios::app);
  out << record.dump() << "\n";
}

Run prepare(const SupervisorOptions& o) {
  checkOptions(o);
  Run run{o, outputDirOf(o), checkpointDirOf(o), recoveryPathsOf(o), {}, {}, firstLaunch(o)};
  ensureWritableDir(run.paths.dir, "recovery directory");
  fs::remove_all(run.paths.candidates());
  fs::remove(run.paths.history());
  fs::remove_all(fs::path(run.paths.dir) / "members");  // earlier runs' heartbeat endpoints
  fs::remove_all(run.paths.held().dir);
  return run;
}

void record(Run& run, FailureRecord failure) {
  failure.processesAfter = run.plan.processes;
  failure.relaunchedAt = unixNow();
  run.history.failures.push_back(std::move(failure));
  elastic::writeHistory(run.paths, run.history);
}

// Lost before its first step: nothing to lose; the same start again, on as many processes.
void restartSame(Run& run, int status) {
  std::fprintf(stderr, "tl-run: the launch failed before its first step (mpirun exit status %d); starting it again\n",
               status);
  FailureRecord failure;
  failure.detectedBy = "mpirun";
  failure.reason = "lost before its first step";
  failure.boundaryStep = run.resumedFrom();
  failure.processesBefore = run.plan.processes;
  ++run.plan.launch;
  record(run, failure);
}

int noCopyLeft(const Run& run, int status) {
  appendMetrics(run.outputDir, {{"lost_ranks", json::array()}, {"reason", "no process left a copy of the job"},
                                {"processes_before", run.plan.processes}, {"mpirun_exit_status", status}});
  std::string good = run.kept;  // where the user can go on from by hand
  if (good.empty() && fileExists(run.checkpointDir + "/checkpoint.tl")) good = run.checkpointDir;
  std::fprintf(stderr, "tl-run: error: the job failed (mpirun exit status %d) and no process left a copy of its state; %s\n",
               status, good.empty() ? "there is no checkpoint to go on from" : ("the last good checkpoint is " + good).c_str());
  return 1;
}

FailureRecord lossOf(const FailureReport& report, int processes) {
  const Candidate& best = report.candidates.front();
  int64_t completed = best.step();
  double snapshotAt = 0, detectedAt = 1e300;
  bool hung = false;
  for (const Candidate& c : report.candidates) {
    completed = std::max(completed, c.info.completedStep);
    snapshotAt = std::max(snapshotAt, c.info.snapshotAt);
    if (c.info.detectedAt > 0) detectedAt = std::min(detectedAt, c.info.detectedAt);
    hung |= c.info.timedOut;
  }
  FailureRecord f;
  f.lostRanks = report.lostRanks;
  f.lostHosts = report.lostHosts;
  // Held copies (heldCopies) come from processes whose member watcher found the others silent.
  const bool cutOff = best.info.reason.rfind("this host was cut off", 0) == 0;
  f.detectedBy = hung ? "hang-timeout" : cutOff ? "member-watcher" : "mpirun";
  f.reason = best.info.reason;
  f.boundaryStep = best.step();
  f.stepsRecomputed = completed - best.step();
  // The failure's moment: the last boundary a survivor completed, or the first detection when
  // that came earlier (a survivor inside an optimizer update finishes it after the loss).
  const double failedAt = std::min(snapshotAt, detectedAt);
  f.failedAt = failedAt;
  f.detectionSeconds = detectedAt - failedAt;
  f.processesBefore = report.processes > 0 ? report.processes : processes;
  f.copies = report.candidates.size();
  return f;
}

// A launch lost without a copy in candidates/: the held copies of a side that found itself cut
// off (recovery/held), if any, are the job (the side that went on ended without one).
FailureReport heldCopies(const Run& run) {
  FailureReport held = elastic::readFailure(run.paths.held(), run.plan.processes);
  if (!held.candidates.empty())
    std::fprintf(stderr,
                 "tl-run: the side of the job that went on ended without a copy; restarting from "
                 "the %zu held "
                 "copies of the side that was cut off (step %lld)\n",
                 held.candidates.size(), (long long)held.candidates.front().step());
  return held;
}

// Lost with copies: keep the newest out of candidates/ (the next launch writes new ones there)
// and relaunch from it on what remains; false once the job was lost too often.
bool relaunchFrom(Run& run, const FailureReport& report) {
  const std::string state = run.paths.keptState(run.plan.launch);
  fs::remove_all(state);
  fs::rename(report.candidates.front().dir, state);
  if (!run.kept.empty()) fs::remove_all(run.kept);
  run.kept = state;
  const FailureRecord failure = lossOf(report, run.plan.processes);
  const std::string& why = report.candidates.front().info.reason;
  if (run.o.inPlace && why.rfind("in place not possible: ", 0) == 0)
    std::fprintf(stderr, "tl-run: the survivors could not go on in place (%s); restarting the job from their copies\n",
                 why.substr(23).c_str());
  std::fprintf(stderr, "tl-run: lost rank(s) %s%s%s after step %lld (%s); %zu copies of the job\n",
               joined(report.lostRanks).c_str(), report.lostHosts.empty() ? "" : " on host(s) ",
               joined(report.lostHosts).c_str(), (long long)failure.boundaryStep, failure.detectedBy.c_str(),
               report.candidates.size());
  fs::remove_all(run.paths.candidates());
  fs::remove_all(run.paths.held().dir);
  if (run.plan.launch >= run.o.maxRestarts) {
    appendMetrics(run.outputDir, elastic::toJson(failure));
    std::fprintf(stderr,
                 "tl-run: error: the job was lost %d times, more than --max-restarts %d; the last good checkpoint "
                 "is %s (step %lld): go on with tl-launch --resume %s\n",
                 run.plan.launch + 1, run.o.maxRestarts, run.kept.c_str(), (long long)failure.boundaryStep,
                 run.kept.c_str());
    return false;
  }
  run.plan = nextLaunch(run.o, run.plan, report, run.kept);
  record(run, failure);
  return true;
}

}  // namespace

const char* outcomeName(Outcome o) {
  switch (o) {
    case Outcome::Finished: return "finished";
    case Outcome::Interrupted: return "interrupted";
    case Outcome::BadInput: return "bad input";
    case Outcome::LostBeforeFirstStep: return "lost before the first step";
    case Outcome::LostWithoutCopy: return "lost without a copy";
    case Outcome::Lost: return "lost";
  }
  return "?";
}

Outcome classify(const LaunchExit& exit, bool copies, bool progressed) {
  if (exit.status == 0) return Outcome::Finished;
  if (exit.interrupted) return Outcome::Interrupted;
  if (copies) return Outcome::Lost;
  if (exit.status == 2) return Outcome::BadInput;  // already reported by tl-launch
  return progressed ? Outcome::LostWithoutCopy : Outcome::LostBeforeFirstStep;
}

int supervise(const SupervisorOptions& o, const LaunchStep& launch) {
  Run run = prepare(o);
  for (;;) {
    if (run.plan.launch > 0)
      std::fprintf(stderr, "tl-run: restart %d of at most %d: %d processes, resuming from step %lld\n", run.plan.launch,
                   o.maxRestarts, run.plan.processes, (long long)run.resumedFrom());
    std::fflush(stderr);
    // (The lost launch may have logged the step in flight: what counts is a step this one logs.)
    const int64_t loggedBefore = run.plan.launch == 0 && run.plan.resume.empty() ? -1 : lastLoggedStep(run.outputDir);
    const LaunchExit exit = launch(launchCommand(o, run.plan), run.plan);
    FailureReport report = elastic::readFailure(run.paths, run.plan.processes);
    if (report.candidates.empty() && exit.status != 0 && !exit.interrupted)
      report = heldCopies(run);
    switch (classify(exit, !report.candidates.empty(), lastLoggedStep(run.outputDir) > loggedBefore)) {
      case Outcome::Finished:
        fs::remove_all(run.paths.held().dir);  // the side that went on finished the job
        if (!run.history.failures.empty())
          std::fprintf(stderr, "tl-run: the job finished after %zu lost launch(es)\n", run.history.failures.size());
        return 0;
      case Outcome::Interrupted:
        std::fprintf(stderr, "tl-run: interrupted; not restarting\n");
        return 130;
      case Outcome::BadInput:
        return 2;
      case Outcome::LostBeforeFirstStep:
        if (run.plan.launch < o.maxRestarts) {
          restartSame(run, exit.status);
          continue;
        }
        [[fallthrough]];
      case Outcome::LostWithoutCopy:
        return noCopyLeft(run, exit.status);
      case Outcome::Lost:
        if (!relaunchFrom(run, report)) return 1;
    }
  }
}

int supervise(const SupervisorOptions& o) {
  watchInterrupts();
  const elastic::RecoveryPaths paths = recoveryPathsOf(o);
  return supervise(o, [&](const std::vector<std::string>& argv, const LaunchPlan& plan) {
    return runMpirun(argv, o, paths, plan.processes);
  });
}

}  // namespace tl::run
