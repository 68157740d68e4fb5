#include "elastic/recovery/recovery_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/check.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/process_state.h"
#include "common/signals.h"
#include "elastic/checkpoint/job_checkpoint.h"
#include "elastic/recovery/member_heartbeat.h"  // the destructor ends heartbeat_
#include "runtime/comm/collective_timeout.h"
#include "runtime/comm/json_collectives.h"
#include "runtime/comm/process_loss.h"

namespace tl::elastic {
namespace {

// The exit status of a process that wrote its candidate after SIGTERM (tl-run reads candidates,
// not statuses; this one just says "ended on purpose" in mpirun's report).
constexpr int kExitAfterCandidate = 75;

int gWakePipe[2] = {-1, -1};
// This process left the job (in-place shrink) and only waits for its end: a signal ends it at
// once, with no copy (it holds no part of the job any more).
std::atomic<bool> gLeft{false};
void onTerminate(int) {
  const char byte = 't';
  [[maybe_unused]] ssize_t n = ::write(gWakePipe[1], &byte, 1);
}
// The MPI runtime reported a lost process (Open MPI 5 under tl-run: runtime/comm/process_loss.h).
void onProcessLoss() {
  const char byte = 'l';
  [[maybe_unused]] ssize_t n = ::write(gWakePipe[1], &byte, 1);
}


bool processEnded(int64_t pid) {
  const char state = processState(pid);
  return state == 0 || state == 'Z' || state == 'X' || state == 'x';
}

}  // namespace

RecoveryGuard::RecoveryGuard(std::string recoveryDir, est::StepObserver& inner,
                             est::EstExecutor& executor)
    : inner_(inner), executor_(&executor) {
  paths_.dir = std::move(recoveryDir);
  rank_ = executor.comm().rank();
  host_ = hostName();
  config_ = executor.config();
  // Identified once: a candidate is written while the job is being torn down.
  data_ = data::identifyData(config_.dataset, config_.dataDir);
  ensureWritableDir(paths_.candidates(), "recovery directory");
  history_ = elastic::readHistory(paths_);
}

void RecoveryGuard::leave() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    executor_ = nullptr;
  }
  gLeft.store(true);
  if (watcher_.joinable()) watcher_.detach();  // it touches nothing of this object any more
}

RecoveryGuard::~RecoveryGuard() {
  if (memberWatcher_.joinable()) {
    stopWatching_.store(true);
    memberWatcher_.join();
  }
  if (watcher_.joinable()) {
    // The job is over: mpirun's signals end the process as they would without the guard.
    ::signal(SIGCONT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    const char byte = 'q';
    [[maybe_unused]] ssize_t n = ::write(gWakePipe[1], &byte, 1);
    watcher_.join();
  }
}

void RecoveryGuard::start(est::EstExecutor& executor) {
  const nlohmann::json mine = {{"pid", int64_t(::getpid())}, {"host", host_}};
  const auto all = comm::allgatherJson(executor.comm(), mine);
  for (size_t r = 0; r < all.size(); ++r)
    members_.push_back({int(r), all[r].at("host").get<std::string>(), all[r].at("pid").get<int64_t>()});
  est::BoundarySnapshot now = executor.snapshotBoundary(executor.stepsDone());
  const std::string placement = executor.placement().toString();
  std::lock_guard<std::mutex> lock(mutex_);
  current_ = std::move(now);
  placement_ = placement;
  stateTime_ = unixNow();
  stateTimeSeen_.store(stateTime_);
  completed_.store(executor.stepsDone());
}

void RecoveryGuard::setMembers(std::vector<elastic::Member> members) {
  {
    std::lock_guard<std::mutex> lock(watchMutex_);
    watched_ = members;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  members_ = std::move(members);
}

void RecoveryGuard::watchMembers() {
  TL_CHECK(!memberWatcher_.joinable(), "one member watcher per guard");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::lock_guard<std::mutex> watch(watchMutex_);
    watched_ = members_;
  }
  memberWatcher_ = std::thread([this] {
    const int64_t self = int64_t(::getpid());
    while (!stopWatching_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (gLeft.load()) continue;
      std::vector<elastic::Member> watched;
      {
        std::lock_guard<std::mutex> lock(watchMutex_);
        watched = watched_;
      }
      bool newLoss = false;
      std::vector<elastic::Member> lost = pollHeartbeats(watched);
      for (const elastic::Member& m : watched)
        if (m.host == host_ && m.pid > 1 && m.pid != self && processEnded(m.pid)) lost.push_back(m);
      for (const elastic::Member& m : lost) {
        std::lock_guard<std::mutex> lock(watchMutex_);
        if (std::find(gone_.begin(), gone_.end(), m) != gone_.end()) continue;
        if (gone_.empty()) {
          firstGoneAt_ = unixNow();
          goneSnapshotAt_ = stateTimeSeen_.load();
        }
        gone_.push_back(m);
        newLoss = true;
      }
      // The training thread leaves the collective it waits in (or the next one it starts).
      if (newLoss) comm::abandonCollectives();
    }
  });
}

bool RecoveryGuard::endHungMembers(const std::vector<int>& ranks) {
  if (ranks.empty() || !memberWatcher_.joinable()) {
    spdlog::info("a collective timed out without naming its absent ranks ({}), or in place is not armed: the restart "
                 "path takes over",
                 ranks.size());
    return false;
  }
  std::vector<elastic::Member> hung;
  {
    std::lock_guard<std::mutex> lock(watchMutex_);
    for (int rank : ranks) {
      const auto m = std::find_if(watched_.begin(), watched_.end(), [&](const elastic::Member& x) { return x.rank == rank; });
      if (m == watched_.end() || m->host != host_ || m->pid <= 1 || m->pid == int64_t(::getpid())) {
        spdlog::info("rank {} held the job for the hang timeout and is not a stopped process of this host: the "
                     "restart path takes over",
                     rank);
        return false;
      }
      // Stopped, or ended (another survivor ended it just now: for a moment it runs to die, so
      // look again for up to a second); anything else is a slow peer, for the restart path.
      char state = processState(m->pid);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (state != 'T' && state != 't' && !processEnded(m->pid) && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        state = processState(m->pid);
      }
      if (state != 'T' && state != 't' && !processEnded(m->pid)) {
        spdlog::info("rank {} (pid {}) held the job for the hang timeout but is not stopped (state {}): the restart "
                     "path takes over",
                     rank, m->pid, state);
        return false;
      }
      hung.push_back(*m);
    }
  }
  for (const elastic::Member& m : hung) {
    if (processEnded(m.pid)) continue;
    spdlog::warn("rank {} (pid {}) is stopped and held the job for the hang timeout: ending it, the others go on in place",
                 m.rank, m.pid);
    ::kill(pid_t(m.pid), SIGKILL);
  }
  endedHung_.store(true);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    {
      std::lock_guard<std::mutex> lock(watchMutex_);
      if (std::all_of(hung.begin(), hung.end(), [&](const elastic::Member& m) {
            return std::find(gone_.begin(), gone_.end(), m) != gone_.end();
          }))
        return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

RecoveryGuard::Losses RecoveryGuard::losses() const {
  std::lock_guard<std::mutex> lock(watchMutex_);
  Losses l;
  for (const elastic::Member& m : gone_) l.ranks.push_back(m.rank);
  std::sort(l.ranks.begin(), l.ranks.end());
  // A host is lost when every member it had is gone (its link or its machine, as a restart says).
  for (const elastic::Member& m : gone_) {
    if (std::find(l.hosts.begin(), l.hosts.end(), m.host) != l.hosts.end()) continue;
    const bool all = std::all_of(watched_.begin(), watched_.end(), [&](const elastic::Member& w) {
      return w.host != m.host || std::find(gone_.begin(), gone_.end(), w) != gone_.end();
    });
    if (all) l.hosts.push_back(m.host);
  }
  std::sort(l.hosts.begin(), l.hosts.end());
  l.firstAt = firstGoneAt_;
  l.snapshotAt = goneSnapshotAt_;
  return l;
}

est::JobState RecoveryGuard::currentState() {
  std::lock_guard<std::mutex> lock(mutex_);
  TL_CHECK(executor_ && !current_.empty(), "in-place recovery: this process holds no whole boundary");
  return executor_->stateAt(current_);
}

int64_t RecoveryGuard::currentStep() {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_.stepsDone;
}

void RecoveryGuard::resumedInPlace(est::EstExecutor& executor, elastic::FailureRecord failure) {
  const nlohmann::json mine = {{"pid", int64_t(::getpid())}, {"host", host_}};
  const auto all = comm::allgatherJson(executor.comm(), mine);
  std::vector<elastic::Member> members;
  for (size_t r = 0; r < all.size(); ++r)
    members.push_back({int(r), all[r].at("host").get<std::string>(), all[r].at("pid").get<int64_t>()});
  est::BoundarySnapshot now = executor.snapshotBoundary(executor.stepsDone());
  {
    std::lock_guard<std::mutex> lock(watchMutex_);
    watched_ = members;
    gone_.clear();
    firstGoneAt_ = 0;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  members_ = std::move(members);
  current_ = std::move(now);
  pending_ = est::BoundarySnapshot{};
  placement_ = executor.placement().toString();
  rank_ = executor.comm().rank();
  stateTime_ = unixNow();
  stateTimeSeen_.store(stateTime_);
  completed_.store(executor.stepsDone());
  history_.failures.push_back(std::move(failure));
  recorded_ = false;
}

void RecoveryGuard::beforeUpdate(est::EstExecutor& executor) {
  // Every member gathers all N contexts: any survivor can write the whole job.
  pending_ = executor.snapshotBoundary(executor.stepsDone() + 1);
}

void RecoveryGuard::runUpdate(est::EstExecutor& executor, const std::function<void()>& update) {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    update();
  } catch (...) {
    executor_ = nullptr;  // parameters half-updated: this process holds no whole boundary
    throw;
  }
  TL_CHECK_EQ(pending_.stepsDone, executor.stepsDone(), "runUpdate without beforeUpdate");
  current_ = std::move(pending_);
  pending_ = est::BoundarySnapshot{};
  stateTime_ = unixNow();
  stateTimeSeen_.store(stateTime_);
  completed_.store(executor.stepsDone());
}

est::StepAction RecoveryGuard::afterStep(int64_t stepsDone, est::EstExecutor& executor) {
  if (!recorded_) recordRecovery(stepsDone);
  const est::StepAction action = inner_.afterStep(stepsDone, executor);
  // A layout change may have renumbered the members, or let this one go.
  std::lock_guard<std::mutex> lock(mutex_);
  if (executor.inJob()) {
    rank_ = executor.comm().rank();
    placement_ = executor.placement().toString();
  } else {
    executor_ = nullptr;
  }
  return action;
}

void RecoveryGuard::recordRecovery(int64_t stepsDone) {
  recorded_ = true;
  if (sink_) sink_(counts());
  if (!metrics_ || history_.failures.empty()) return;
  const elastic::FailureRecord& f = history_.failures.back();
  nlohmann::json failure = elastic::toJson(f);
  failure["type"] = "failure";
  metrics_->write(failure);
  const double failedAt = f.failedAt.value_or(0.0);
  const double now = unixNow();
  nlohmann::json recovery{{"type", "recovery"},
                          {"mode", f.mode},
                          {"step", stepsDone},
                          {"resumed_from_step", f.boundaryStep},
                          {"steps_recomputed", f.stepsRecomputed},
                          {"processes", f.processesAfter.value_or(0)},
                          {"recovery_s", failedAt > 0 ? now - failedAt : 0.0}};
  if (f.mode == "in-place") {
    recovery["detected_at"] = failedAt;  // recovery_s counts from here
    recovery["agreement_s"] = f.agreementSeconds.value_or(0.0);
    recovery["first_step_s"] = now - f.resumedAt.value_or(now);
  } else {
    recovery["restart_to_step_s"] = now - f.relaunchedAt.value_or(now);
  }
  metrics_->write(recovery);
  spdlog::info("recovered {} from the loss of rank(s) {} in {:.2f} s (first step after it: {})", f.mode,
               nlohmann::json(f.lostRanks).dump(), recovery["recovery_s"].get<double>(), stepsDone);
}

nlohmann::json RecoveryGuard::counts() const {
  const size_t failures = history_.failures.size();
  nlohmann::json c{{"failures", failures},
                   {"recoveries", failures == 0 ? 0 : (recorded_ ? failures : failures - 1)}};
  if (failures > 0) c["last_failure"] = elastic::toJson(history_.failures.back());
  return c;
}

void RecoveryGuard::writeCandidate(const elastic::RecoveryPaths& where, const Loss& loss) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (written_ || !executor_ || current_.empty()) return;
  written_ = true;
  elastic::CandidateInfo info;
  info.detectedAt = unixNow();
  info.rank = rank_.load();
  info.host = host_;
  info.pid = int64_t(::getpid());
  info.step = current_.stepsDone;
  info.completedStep = completed_.load();
  info.reason = loss.reason;
  info.timedOut = loss.timedOut;
  info.missingRanks = loss.missingRanks;
  info.members = members_;
  info.snapshotAt = stateTime_;
  try {
    elastic::JobCheckpoint ck;
    ck.config = config_;
    ck.placement = placement_;
    ck.state = executor_->stateAt(current_);  // the copy of the replica is made only now
    ck.data = data_;
    // The checkpoint first (atomic), then the info that says it is complete.
    elastic::writeJobCheckpoint(where.candidateDir(info.rank), ck);
    info.writtenAt = unixNow();
    elastic::writeCandidateInfo(where, info);
    std::fprintf(stderr, "tl-launch: rank %d (%s): %s; wrote the job at step %lld to %s\n",
                 info.rank, host_.c_str(), loss.reason.c_str(), (long long)current_.stepsDone,
                 where.candidateDir(info.rank).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tl-launch: rank %d: could not write its copy of the job: %s\n", info.rank, e.what());
  }
}

void RecoveryGuard::watchTermination() {
  TL_CHECK(gWakePipe[0] < 0, "one recovery watcher per process");
  TL_CHECK(::pipe2(gWakePipe, O_CLOEXEC) == 0, "pipe: ", std::strerror(errno));
  // Open MPI's daemon ends a job by sending SIGCONT (so that stopped processes can take the
  // next signal), then SIGTERM odls_base_sigkill_timeout seconds later, then SIGKILL as long
  // again: the copy is written at the first of them. Open MPI 5's sends them 0.25 s apart; tl-run
  // has it end nobody and report the loss instead (runtime/comm/process_loss.h), which is the
  // notice there.
  handleSignals({SIGCONT, SIGTERM}, onTerminate);
  comm::notifyOnProcessLoss(onProcessLoss);
  watcher_ = std::thread([this] {
    char byte = 0;
    while (::read(gWakePipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    if (byte != 't' && byte != 'l') return;
    if (gLeft.load()) ::_exit(0);
    writeCandidate({byte == 't' ? "ended by mpirun (SIGCONT/SIGTERM) after another rank was lost"
                                : "the MPI runtime reported another process of the job lost",
                    false, {}});
    std::fflush(stderr);
    ::_exit(kExitAfterCandidate);
  });
}

}  // namespace tl::elastic
