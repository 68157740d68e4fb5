#include "tools/run/supervisor.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "common/check.h"
#include "common/files.h"
#include "common/signals.h"

extern char** environ;

namespace tl::run {
namespace fs = std::filesystem;
namespace {

using json = nlohmann::json;
using elastic::Candidate;
using elastic::FailureRecord;
using elastic::FailureReport;
using elastic::Member;
using elastic::RecoveryPaths;

std::atomic<int> gInterrupt{0};
void onInterrupt(int signal) { gInterrupt.store(signal); }

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The value of `--name v` or `--name=v` in `args` (empty when absent).
std::string flagValue(const std::vector<std::string>& args, const std::string& name) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind(name + "=", 0) == 0) return args[i].substr(name.size() + 1);
  }
  return "";
}

bool hasFlag(const std::vector<std::string>& args, const std::string& name) {
  for (const auto& a : args)
    if (a == name || a.rfind(name + "=", 0) == 0) return true;
  return false;
}

std::vector<std::string> withoutFlag(const std::vector<std::string>& args, const std::string& name) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      ++i;
      continue;
    }
    if (args[i].rfind(name + "=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

std::string joined(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}

pid_t spawn(const std::vector<std::string>& argv) {
  std::vector<char*> cargs;
  for (const auto& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, cargs[0], nullptr, nullptr, cargs.data(), environ);
  if (rc != 0) inputError("--mpirun: cannot start '", argv[0], "': ", std::strerror(rc));
  return pid;
}

// The state letter of a process of this host ('Z' zombie, 'T' stopped, 0 when it is gone).
char processState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : 0;
}

// A process of this host that has not ended (a zombie has).
bool running(pid_t pid) {
  const char state = processState(pid);
  return state != 0 && state != 'Z';
}

// The job is down once no rank of this host runs and every rank elsewhere wrote its copy, was
// named missing, or is past the grace. A rank named missing that wrote no copy is waited for up
// to the partition grace (min of kill grace and hang timeout): across a network partition each
// side names the other, and both sides write their copies; a stopped rank of this host (a
// hang) is SIGKILLed at once, a running one after the grace.
bool jobIsDown(const FailureReport& report, const SupervisorOptions& o, double sinceFirstCopy) {
  const std::string here = hostName();
  const bool partitionGraceOver = sinceFirstCopy > std::min(o.killGraceSeconds, o.hangTimeoutSeconds);
  bool localRunning = false, remoteOpen = false;
  for (const Member& m : report.members()) {
    const int r = m.rank;
    const bool named = std::find(report.namedMissing.begin(), report.namedMissing.end(), r) != report.namedMissing.end();
    const bool wrote = std::find(report.wrote.begin(), report.wrote.end(), r) != report.wrote.end();
    if (m.host != here) {
      remoteOpen |= !wrote && (!named || !partitionGraceOver);
      continue;
    }
    const pid_t pid = pid_t(m.pid);
    if (pid <= 1 || !running(pid)) continue;
    const char state = processState(pid);
    if (named && !wrote && (state == 'T' || state == 't' || partitionGraceOver)) ::kill(pid, SIGKILL);
    localRunning = true;
  }
  return !localRunning && (!remoteOpen || sinceFirstCopy > o.killGraceSeconds);
}

// Waits for mpirun. Once copies appear the job is being lost: as soon as it is down (above),
// mpirun is ended rather than waited for (its daemon sleeps its kill grace twice).
int waitForMpirun(pid_t pid, const SupervisorOptions& o, const RecoveryPaths& paths, int processes) {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> firstCopy;
  bool interruptSent = false;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (gInterrupt.load() && !interruptSent) {
      ::kill(pid, SIGTERM);
      interruptSent = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (gInterrupt.load() || !fs::exists(paths.candidates())) continue;
    const FailureReport report = elastic::readFailure(paths, processes);
    if (report.candidates.empty()) continue;
    if (!firstCopy) firstCopy = Clock::now();
    const double since = std::chrono::duration<double>(Clock::now() - firstCopy.value()).count();
    if (jobIsDown(report, o, since) || since > 3 * o.killGraceSeconds) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return 128 + SIGKILL;
    }
  }
}

// Where the user can go on from by hand: the newest complete copy or periodic checkpoint.
std::string lastGood(const std::string& kept, const std::string& checkpointDir) {
  if (!kept.empty()) return kept;
  if (fileExists(checkpointDir + "/checkpoint.tl")) return checkpointDir;
  return "";
}

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

}  // namespace

int supervise(const SupervisorOptions& o) {
  TL_REQUIRE(o.processes >= 1, "--np: give the number of processes to start (at least 1)");
  const std::string outputDir = flagValue(o.launchArgs, "--output-dir");
  TL_REQUIRE(!outputDir.empty(), "tl-run needs the job's --output-dir (metrics, summary and recovery go there)");
  TL_REQUIRE(!hasFlag(o.launchArgs, "--collective-timeout"),
             "--collective-timeout: give tl-run --hang-timeout instead (tl-run sets it)");
  TL_REQUIRE(!hasFlag(o.launchArgs, "--recovery-dir"), "--recovery-dir is set by tl-run");
  const RecoveryPaths paths{fs::absolute(outputDir + "/recovery").lexically_normal().string()};
  std::string checkpointDir = flagValue(o.launchArgs, "--checkpoint-dir");
  if (checkpointDir.empty()) checkpointDir = outputDir + "/checkpoint";
  ensureWritableDir(paths.dir, "recovery directory");
  fs::remove_all(paths.candidates());
  fs::remove(paths.history());

  std::vector<std::string> baseArgs = withoutFlag(withoutFlag(o.launchArgs, "--resume"), "--checkpoint-dir");
  std::string resume = flagValue(o.launchArgs, "--resume");
  std::vector<HostSlots> hosts = o.hosts;
  int processes = o.processes;
  elastic::RecoveryHistory history;
  std::string kept;  // the newest copy moved out of candidates/
  handleSignals({SIGINT, SIGTERM}, onInterrupt);

  for (int launch = 0;; ++launch) {
    std::vector<std::string> argv{o.mpirun};
    if (!hosts.empty()) {
      std::vector<std::string> list;
      for (const auto& h : hosts) list.push_back(h.host + ":" + std::to_string(h.slots));
      argv.insert(argv.end(), {"--host", joined(list)});
    }
    argv.insert(argv.end(), o.mpirunArgs.begin(), o.mpirunArgs.end());
    // Survivors need time to write their copy after mpirun's SIGTERM.
    argv.insert(argv.end(), {"--mca", "odls_base_sigkill_timeout", std::to_string(int(o.killGraceSeconds)),
                             "-np", std::to_string(processes), o.launch});
    // A fixed placement fits only its process count; `auto` plans for any.
    const bool fixedPlacement = hasFlag(baseArgs, "--placement") && flagValue(baseArgs, "--placement") != "auto";
    std::vector<std::string> job =
        launch == 0 || processes == o.processes || !fixedPlacement ? baseArgs : withoutFlag(baseArgs, "--placement");
    argv.insert(argv.end(), job.begin(), job.end());
    argv.insert(argv.end(), {"--checkpoint-dir", checkpointDir, "--recovery-dir", paths.dir,
                             "--collective-timeout", std::to_string(o.hangTimeoutSeconds)});
    if (!resume.empty()) argv.insert(argv.end(), {"--resume", resume});
    if (launch > 0)
      std::fprintf(stderr, "tl-run: restart %d of at most %d: %d processes, resuming from step %lld\n", launch,
                   o.maxRestarts, processes, (long long)history.failures.back().boundaryStep);
    std::fflush(stderr);
    const int64_t startStep = history.failures.empty() ? 0 : history.failures.back().boundaryStep;
    // (The lost launch may have logged the step in flight: what counts is a step this one logs.)
    const int64_t loggedBefore = launch == 0 && resume.empty() ? -1 : lastLoggedStep(outputDir);
    const pid_t pid = spawn(argv);
    const int rc = waitForMpirun(pid, o, paths, processes);
    if (rc == 0) {
      if (!history.failures.empty())
        std::fprintf(stderr, "tl-run: the job finished after %zu lost launch(es)\n", history.failures.size());
      return 0;
    }
    if (gInterrupt.load()) {
      std::fprintf(stderr, "tl-run: interrupted; not restarting\n");
      return 130;
    }
    const FailureReport report = elastic::readFailure(paths, processes);
    if (report.candidates.empty() && rc == 2) return 2;  // bad input, already reported by tl-launch
    if (report.candidates.empty() && lastLoggedStep(outputDir) <= loggedBefore && launch < o.maxRestarts) {
      // Lost before its first step: nothing to lose; the same start again, on as many processes.
      std::fprintf(stderr, "tl-run: the launch failed before its first step (mpirun exit status %d); starting it again\n", rc);
      FailureRecord failure;
      failure.detectedBy = "mpirun";
      failure.reason = "lost before its first step";
      failure.boundaryStep = startStep;
      failure.processesBefore = failure.processesAfter.emplace(processes);
      failure.relaunchedAt = unixNow();
      history.failures.push_back(failure);
      elastic::writeHistory(paths, history);
      continue;
    }
    if (report.candidates.empty()) {
      appendMetrics(outputDir, {{"lost_ranks", json::array()}, {"reason", "no process left a copy of the job"},
                                {"processes_before", processes}, {"mpirun_exit_status", rc}});
      const std::string good = lastGood(kept, checkpointDir);
      std::fprintf(stderr,
                   "tl-run: error: the job failed (mpirun exit status %d) and no process left a copy of its "
                   "state; %s\n",
                   rc, good.empty() ? "there is no checkpoint to go on from" : ("the last good checkpoint is " + good).c_str());
      return 1;
    }
    // Keep the newest copy out of candidates/ (the next launch writes new ones there).
    const Candidate& best = report.candidates.front();
    const std::string state = paths.keptState(launch);
    fs::remove_all(state);
    fs::rename(best.dir, state);
    if (!kept.empty()) fs::remove_all(kept);
    kept = state;
    int64_t completed = best.step();
    double snapshotAt = 0, detectedAt = 1e300;
    for (const auto& c : report.candidates) {
      completed = std::max(completed, c.info.completedStep);
      snapshotAt = std::max(snapshotAt, c.info.snapshotAt);
      if (c.info.detectedAt > 0) detectedAt = std::min(detectedAt, c.info.detectedAt);
    }
    const bool hung = std::any_of(report.candidates.begin(), report.candidates.end(),
                                  [](const Candidate& c) { return c.info.timedOut; });
    FailureRecord failure;
    failure.lostRanks = report.lostRanks;
    failure.lostHosts = report.lostHosts;
    failure.detectedBy = hung ? "hang-timeout" : "mpirun";
    failure.reason = best.info.reason;
    failure.boundaryStep = best.step();
    failure.stepsRecomputed = completed - best.step();
    failure.failedAt = snapshotAt;
    failure.detectionSeconds = detectedAt - snapshotAt;
    failure.processesBefore = processes;
    failure.copies = report.candidates.size();
    std::fprintf(stderr, "tl-run: lost rank(s) %s%s%s after step %lld (%s); %zu copies of the job\n",
                 joined(report.lostRanks).c_str(), report.lostHosts.empty() ? "" : " on host(s) ",
                 joined(report.lostHosts).c_str(), (long long)best.step(), failure.detectedBy.c_str(),
                 report.candidates.size());
    fs::remove_all(paths.candidates());
    if (launch >= o.maxRestarts) {
      appendMetrics(outputDir, elastic::toJson(failure));
      std::fprintf(stderr,
                   "tl-run: error: the job was lost %d times, more than --max-restarts %d; the last good checkpoint "
                   "is %s (step %lld): go on with tl-launch --resume %s\n",
                   launch + 1, o.maxRestarts, kept.c_str(), (long long)best.step(), kept.c_str());
      return 1;
    }
    // The next launch: the processes that remain (or, given hosts, what the hosts that remain hold).
    if (!hosts.empty()) {
      std::vector<HostSlots> remaining;
      for (const auto& h : hosts)
        if (std::find(report.lostHosts.begin(), report.lostHosts.end(), h.host) == report.lostHosts.end())
          remaining.push_back(h);
      TL_REQUIRE(!remaining.empty(), "every host was lost; the last good checkpoint is ", kept);
      hosts = remaining;
      int capacity = 0;
      for (const auto& h : hosts) capacity += h.slots;
      processes = std::min(o.processes, capacity);
    } else {
      processes = std::max(1, report.survivors);
    }
    failure.processesAfter = processes;
    failure.relaunchedAt = unixNow();
    history.failures.push_back(failure);
    elastic::writeHistory(paths, history);
    resume = kept;
  }
}

}  // namespace tl::run
