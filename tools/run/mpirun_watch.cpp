#include "tools/run/mpirun_watch.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "common/check.h"
#include "common/files.h"
#include "common/process_state.h"
#include "common/signals.h"
#include "tools/run/grow_back.h"

extern char** environ;

namespace tl::run {
namespace {

using elastic::FailureReport;
using elastic::Member;

std::atomic<int> gInterrupt{0};
void onInterrupt(int signal) { gInterrupt.store(signal); }

pid_t spawn(const std::vector<std::string>& argv) {
  std::vector<char*> cargs;
  for (const auto& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, cargs[0], nullptr, nullptr, cargs.data(), environ);
  if (rc != 0) inputError("--mpirun: cannot start '", argv[0], "': ", std::strerror(rc));
  return pid;
}

// A process of this host that has not ended (a zombie has).
bool running(pid_t pid) {
  const char state = processState(pid);
  return state != 0 && state != 'Z';
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

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
    const bool named = contains(report.namedMissing, m.rank);
    const bool wrote = contains(report.wrote, m.rank);
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

// The largest status a process of an in-place launch noted (0: none).
int notedExitStatus(const elastic::RecoveryPaths& paths) {
  std::ifstream in(paths.exitStatuses());
  int worst = 0;
  for (int status = 0; in >> status;) worst = std::max(worst, status);
  return worst;
}

// In place: seconds mpirun may take to end after the lead wrote summary.json.
constexpr double kFinishedGraceSeconds = 10;

// Whether the lead wrote summary.json (in the output folder, recovery/'s parent) since `started`.
bool summaryWrittenSince(const elastic::RecoveryPaths& paths, std::filesystem::file_time_type started) {
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(std::filesystem::path(paths.dir).parent_path() / "summary.json", ec);
  return !ec && written >= started;
}

// An in-place launch's mpirun (--enable-recovery) exits 0 whatever its processes' statuses: the
// launch finished only when no copy was written, no process noted a failure, and the lead wrote
// summary.json since it started.
int inPlaceStatus(const elastic::RecoveryPaths& paths, int processes,
                  std::filesystem::file_time_type started) {
  if (!elastic::readFailure(paths, processes).candidates.empty()) return 1;
  if (const int noted = notedExitStatus(paths)) return noted;
  return summaryWrittenSince(paths, started) ? 0 : 1;
}

// Open MPI 4.1's daemon on another host reports only the first process of a job that ended
// abnormally (two ranks killed on one host, or a survivor's _exit after a loss), and a daemon
// cut off reports nothing: mpirun --enable-recovery then waits for ever after an in-place job
// finished. Ends it once the job is over and mpirun has had its time.
void endMpirunAfterTheJob(pid_t pid, double sinceSummary) {
  std::fprintf(stderr,
               "tl-run: the job finished %.0f s ago but mpirun has not ended (Open MPI's daemons did not report "
               "every lost process); ending mpirun\n",
               sinceSummary);
  ::kill(pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
}

// In place: processes whose host found itself cut off left held copies (recovery/held) and
// ended. The job went on on the other side as long as its metrics.jsonl is being written; once
// nothing was written to it for the hang timeout and the kill grace together since the held
// copies appeared, that side is gone too (a lead's host that went down holding half the
// members looks, from the other half, like a cut link) and the held copies are all of the job.
bool onlyHeldCopiesLeft(const elastic::RecoveryPaths& paths, int processes,
                        const SupervisorOptions& o,
                        std::optional<std::filesystem::file_time_type>& heldSeen) {
  using FileClock = std::filesystem::file_time_type::clock;
  std::error_code ec;
  if (!std::filesystem::exists(paths.held().candidates(), ec)) return false;
  if (!heldSeen) {
    if (elastic::readFailure(paths.held(), processes).candidates.empty()) return false;
    heldSeen = FileClock::now();
  }
  const auto metrics = std::filesystem::path(paths.dir).parent_path() / "metrics.jsonl";
  auto lastWritten = std::filesystem::last_write_time(metrics, ec);
  if (ec || lastWritten < *heldSeen) lastWritten = *heldSeen;
  const double quiet = std::chrono::duration<double>(FileClock::now() - lastWritten).count();
  if (quiet <= o.hangTimeoutSeconds + o.killGraceSeconds) return false;
  std::fprintf(stderr,
               "tl-run: a side of the job cut itself off and left copies, and nothing was logged "
               "on the other side "
               "for %.0f s: that side is gone too; ending mpirun\n",
               quiet);
  return true;
}

int waitForMpirun(pid_t pid, const SupervisorOptions& o, const elastic::RecoveryPaths& paths, int processes) {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> firstCopy;
  const auto started = std::filesystem::file_time_type::clock::now();
  bool interruptSent = false;
  // In place: after a recovery the job asks to grow back to this launch's size (--grow-back).
  std::optional<GrowBack> growBack;
  std::optional<Clock::time_point> finished;  // in place: when summary.json was seen written
  std::optional<std::filesystem::file_time_type> heldSeen;  // in place: when held copies appeared
  if (o.inPlace && o.growBack) growBack.emplace(std::filesystem::path(paths.dir).parent_path().string(), processes);
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (growBack && done != pid) growBack->poll();
    if (done == pid) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (o.inPlace && code == 0) return inPlaceStatus(paths, processes, started);
#if TL_OPEN_MPI_5
      // A recoverable job (relaunch.cpp) ends with status 0 when its only failures were ranks
      // killed by a signal, even when all of them were: it finished only if it left copies of
      // none and its lead wrote summary.json (in the output folder, recovery/'s parent) since
      // it started.
      if (code == 0) {
        if (!elastic::readFailure(paths, processes).candidates.empty()) return 1;
        if (!summaryWrittenSince(paths, started)) return 1;
      }
#endif
      return code;
    }
    if (gInterrupt.load() && !interruptSent) {
      ::kill(pid, SIGTERM);
      interruptSent = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (o.inPlace && !finished && summaryWrittenSince(paths, started)) finished = Clock::now();
    if (finished && !gInterrupt.load()) {
      const double since = std::chrono::duration<double>(Clock::now() - finished.value()).count();
      if (since > kFinishedGraceSeconds) {
        endMpirunAfterTheJob(pid, since);
        return inPlaceStatus(paths, processes, started);
      }
    }
    if (o.inPlace && !finished && !gInterrupt.load() &&
        onlyHeldCopiesLeft(paths, processes, o, heldSeen)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return 128 + SIGKILL;
    }
    if (gInterrupt.load() || !std::filesystem::exists(paths.candidates())) continue;
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

}  // namespace

void watchInterrupts() { handleSignals({SIGINT, SIGTERM}, onInterrupt); }

LaunchExit runMpirun(const std::vector<std::string>& argv, const SupervisorOptions& o,
                     const elastic::RecoveryPaths& paths, int processes) {
#if TL_OPEN_MPI_5
  // Open MPI 5 ends a process whose TCP connection to a lost one closes ("Socket closed" on a
  // NULL communicator, MPI_ERRORS_ARE_FATAL): every survivor of a grow, whose started process
  // talks TCP even on one host (runtime/comm/mpi/mpi_session.cpp), dies before writing its copy.
  // Its fault tolerance (ULFM) takes such a process for failed instead, and the survivors learn
  // of the loss from the runtime (relaunch.cpp). Set for mpirun, which passes OMPI_MCA_*
  // variables on to every process of the job and to those a grow starts; a user's own choice is
  // kept.
  ::setenv("OMPI_MCA_mpi_ft_enable", "1", /*overwrite=*/0);
#endif
  std::error_code ec;
  std::filesystem::remove(paths.exitStatuses(), ec);  // this launch's own
  const int status = waitForMpirun(spawn(argv), o, paths, processes);
  return {status, gInterrupt.load() != 0};
}

}  // namespace tl::run
