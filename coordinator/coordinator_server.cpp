#include "coordinator/coordinator_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "common/check.h"
#include "common/clock.h"

namespace tl::coordinator {

namespace {

using Clock = std::chrono::steady_clock;

// A peer that does not read its assignments must not make the coordinator buffer forever.
constexpr size_t kMaxPendingOutput = 1 << 20;

// Descriptors besides the connections: stdio, listener, stop pipe, locks, log, and slack for
// what libraries open.
constexpr rlim_t kReservedDescriptors = 32;
constexpr double kWarningIntervalSeconds = 10;
constexpr double kMinAcceptBackoffSeconds = 0.05, kMaxAcceptBackoffSeconds = 1;

size_t connectionLimit(int maxConnections) {
  size_t limit = size_t(std::max(1, maxConnections));
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    rlim_t room = files.rlim_cur > kReservedDescriptors ? files.rlim_cur - kReservedDescriptors : 1;
    limit = std::min(limit, size_t(room));
  }
  return limit;
}

std::string heldBackNote(int64_t heldBack) {
  return heldBack > 0 ? " (" + std::to_string(heldBack) + " more since the last such line)" : "";
}

// spdlog's file sinks open their file by name, following a symbolic link; this one writes to a
// descriptor opened with O_NOFOLLOW.
class DescriptorSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit DescriptorSink(Fd fd) : fd_(std::move(fd)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t line;
    formatter_->format(message, line);
    const char* data = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(fd_.get(), data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a full disk must not stop the coordinator
      data += n;
      left -= size_t(n);
    }
  }
  void flush_() override {}

 private:
  Fd fd_;
};

std::string snippet(const std::string& line) {
  return line.size() <= 120 ? line : line.substr(0, 120) + "...";
}

}  // namespace

CoordinatorServer::CoordinatorServer(const CoordinatorOptions& options)
    : options_(options),
      balancer_(options.balancer),
      connectionLimit_(connectionLimit(options.maxConnections)) {
  runDirFd_ = openRunDir(options_.runDir);
  socketFile_ = socketPath(options_.runDir);
  instanceLock_ = openRunDirFile(runDirFd_.get(), options_.runDir, kInstanceLockFile, O_RDWR);
  // A coordinator that is shutting down holds the lock for a few more milliseconds after it
  // stopped listening; one that still accepts connections is alive.
  auto start = Clock::now();
  while (::flock(instanceLock_.get(), LOCK_EX | LOCK_NB) != 0) {
    TL_REQUIRE(errno == EWOULDBLOCK || errno == EINTR, "cannot lock '",
               instanceLockPath(options_.runDir), "': ", std::strerror(errno));
    TL_REQUIRE(secondsSince(start) < 5 && !someoneListens(socketPath(options_.runDir)),
               "another tl-coordinator already serves '", options_.runDir, "'");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(instanceLock_.get(), 0) == 0) {
    (void)!::pwrite(instanceLock_.get(), pid.data(), pid.size(), 0);
  }

  auto sink = std::make_shared<DescriptorSink>(
      openRunDirFile(runDirFd_.get(), options_.runDir, kLogFile, O_WRONLY | O_APPEND));
  log_ = std::make_shared<spdlog::logger>("tl-coordinator", sink);
  log_->set_pattern("%Y-%m-%d %H:%M:%S.%e [%l] %v");
  log_->flush_on(spdlog::level::info);

  // We hold the instance lock, so whatever socket file is there belongs to a dead coordinator.
  ::unlink(socketFile_.c_str());
  listener_ = listenUnix(socketFile_);
  setNonBlocking(listener_.get());
  int pipeFds[2];
  TL_CHECK(::pipe2(pipeFds, O_CLOEXEC | O_NONBLOCK) == 0, std::strerror(errno));
  stopRead_.reset(pipeFds[0]);
  stopWrite_.reset(pipeFds[1]);
  log_->info("tl-coordinator pid {} serving {}; loader cores: {}; connection limit {}", ::getpid(),
             socketFile_,
             options_.balancer.loaderCores > 0 ? std::to_string(options_.balancer.loaderCores)
                                               : "hardware cores minus the jobs' compute threads",
             connectionLimit_);
}

CoordinatorServer::~CoordinatorServer() = default;

void CoordinatorServer::requestStop() {
  char byte = 1;
  (void)!::write(stopWrite_.get(), &byte, 1);
}

std::string CoordinatorServer::name(int id) const {
  auto it = connections_.find(id);
  std::string text = "connection #" + std::to_string(id);
  if (it != connections_.end() && !it->second.jobId.empty()) text += " (" + it->second.jobId + ")";
  return text;
}

void CoordinatorServer::run() {
  auto idleSince = Clock::now();
  auto lastLiveness = Clock::now();
  Fd exitLock;  // held from the idle decision until the socket file is gone
  for (;;) {
    // While accepting is paused the listener is left out (poll skips a negative descriptor).
    const bool accepting = Clock::now() >= acceptPausedUntil_;
    int timeoutMs = 250;
    if (!accepting) {
      auto pause =
          std::chrono::duration_cast<std::chrono::milliseconds>(acceptPausedUntil_ - Clock::now());
      timeoutMs = std::min(timeoutMs, int(pause.count()) + 1);
    }
    std::vector<pollfd> fds{{stopRead_.get(), POLLIN, 0},
                            {accepting ? listener_.get() : -1, POLLIN, 0}};
    std::vector<int> ids;
    for (auto& [id, connection] : connections_) {
      short events = POLLIN | (connection.out.empty() ? 0 : POLLOUT);
      fds.push_back({connection.fd.get(), events, 0});
      ids.push_back(id);
    }
    int ready = ::poll(fds.data(), fds.size(), timeoutMs);
    TL_CHECK(ready >= 0 || errno == EINTR, "poll: ", std::strerror(errno));
    if (ready > 0 && fds[0].revents) {
      log_->info("stop requested; {} connections open", connections_.size());
      break;
    }
    if (ready > 0 && fds[1].revents) acceptAll();
    for (size_t i = 0; ready > 0 && i < ids.size(); ++i) {
      short revents = fds[i + 2].revents;
      auto it = connections_.find(ids[i]);
      if (!revents || it == connections_.end() || dropped_.count(ids[i])) continue;
      if (revents & (POLLIN | POLLHUP | POLLERR)) readFrom(ids[i], it->second);
      if ((revents & POLLOUT) && !dropped_.count(ids[i])) flush(ids[i], it->second);
    }
    if (secondsSince(lastLiveness) >= options_.livenessCheckSeconds) {
      checkLiveness();
      closeUnregistered();
      lastLiveness = Clock::now();
    }
    // Remove dropped connections first, so no decision below is sent to a closed one.
    std::vector<std::string> leftJobs;
    for (auto& [id, why] : dropped_) {
      auto it = connections_.find(id);
      if (it == connections_.end()) continue;
      if (it->second.jobId.empty()) {
        // Mostly ensureCoordinator probing whether anyone listens.
        log_->debug("{} closed before registering: {}", name(id), why);
      } else {
        log_->info("{} closed: {}", name(id), why);
        leftJobs.push_back(it->second.jobId);
      }
      connections_.erase(it);
    }
    dropped_.clear();
    for (const std::string& job : leftJobs) apply(balancer_.removeJob(job));

    if (!connections_.empty() || options_.idleExitSeconds <= 0) {
      idleSince = Clock::now();
    } else if (secondsSince(idleSince) >= options_.idleExitSeconds) {
      // Not while a job holds the spawn lock: it has just found this coordinator alive.
      exitLock = openRunDirFile(runDirFd_.get(), options_.runDir, kSpawnLockFile, O_RDWR);
      if (::flock(exitLock.get(), LOCK_EX | LOCK_NB) == 0) {
        log_->info("no jobs for {} s; exiting", options_.idleExitSeconds);
        break;
      }
      exitLock.reset();
      idleSince = Clock::now();
    }
  }
  ::unlink(socketFile_.c_str());
  listener_.reset();
  connections_.clear();
}

bool CoordinatorServer::WarningThrottle::allow(int64_t& heldBack) {
  if (last_ != Clock::time_point{} && secondsSince(last_) < kWarningIntervalSeconds) {
    ++held_;
    return false;
  }
  last_ = Clock::now();
  heldBack = held_;
  held_ = 0;
  return true;
}

void CoordinatorServer::acceptAll() {
  for (;;) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && errno == EINTR) continue;
    if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (fd < 0) {
      // EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays queued and the listener stays
      // readable, so polling it again at once would spin.
      pauseAccepting(errno);
      return;
    }
    acceptBackoffSeconds_ = 0;
    if (connections_.size() >= connectionLimit_ && !evictOldestUnregistered()) {
      ::close(fd);  // its client sees the connection closed and retries later
      int64_t heldBack = 0;
      if (limitWarnings_.allow(heldBack)) {
        log_->warn(
            "connection limit ({}) reached and every connection belongs to a job: "
            "closed a new connection{}",
            connectionLimit_, heldBackNote(heldBack));
      }
      continue;
    }
    Connection connection;
    connection.fd.reset(fd);
    connection.accepted = Clock::now();
    connections_.emplace(nextId_++, std::move(connection));
  }
}

void CoordinatorServer::pauseAccepting(int error) {
  acceptBackoffSeconds_ =
      std::clamp(acceptBackoffSeconds_ * 2, kMinAcceptBackoffSeconds, kMaxAcceptBackoffSeconds);
  acceptPausedUntil_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(acceptBackoffSeconds_));
  int64_t heldBack = 0;
  if (acceptWarnings_.allow(heldBack)) {
    log_->warn("accept: {}; {} connections open (limit {}); not accepting for {} ms{}",
               std::strerror(error), connections_.size(), connectionLimit_,
               int(acceptBackoffSeconds_ * 1000), heldBackNote(heldBack));
  }
}

bool CoordinatorServer::evictOldestUnregistered() {
  // Ids grow with time: the first unregistered connection in the map is the oldest.
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (!it->second.jobId.empty()) continue;
    int64_t heldBack = 0;
    if (limitWarnings_.allow(heldBack)) {
      log_->warn(
          "connection limit ({}) reached: closed {}, which had not registered, for a "
          "new one{}",
          connectionLimit_, name(it->first), heldBackNote(heldBack));
    }
    dropped_.erase(it->first);
    connections_.erase(it);  // no job to remove: it can go at once
    return true;
  }
  return false;
}

void CoordinatorServer::closeUnregistered() {
  if (options_.registerTimeoutSeconds <= 0) return;
  int64_t closed = 0;
  for (auto& [id, connection] : connections_) {
    if (!connection.jobId.empty() || dropped_.count(id) ||
        secondsSince(connection.accepted) < options_.registerTimeoutSeconds) {
      continue;
    }
    drop(id, "did not register in time");
    ++closed;
  }
  int64_t heldBack = 0;
  if (closed > 0 && timeoutNotes_.allow(heldBack)) {
    log_->info("closed {} connection(s) that did not register within {} s{}", closed,
               options_.registerTimeoutSeconds, heldBackNote(heldBack));
  }
}

void CoordinatorServer::readFrom(int id, Connection& connection) {
  char buffer[4096];
  for (;;) {
    ssize_t n = ::recv(connection.fd.get(), buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      drop(id, n == 0 ? "peer closed the connection" : std::strerror(errno));
      return;
    }
    std::string line;  // what a rejection quotes; empty when the bytes never formed a line
    try {
      connection.in.append(buffer, size_t(n));
      while (!dropped_.count(id) && connection.in.nextLine(line)) handleLine(id, connection, line);
    } catch (const std::exception& e) {  // InputError from parsing, or a rejected register
      reject(id, e.what(), line);
    }
    if (dropped_.count(id)) return;
  }
}

void CoordinatorServer::handleLine(int id, Connection& connection, const std::string& line) {
  JobMessage message = decodeJobMessage(line);
  if (auto* r = std::get_if<RegisterMessage>(&message)) {
    TL_REQUIRE(connection.jobId.empty(), "register sent twice on one connection");
    JobSpec spec{r->pid,     r->computeThreads, r->minWorkers, r->maxWorkers,
                 r->workers, r->cacheBytes,     r->samples};
    Decision decision = balancer_.addJob(r->job, spec);  // InputError for a duplicate id
    connection.jobId = r->job;
    connection.pid = r->pid;
    log_->info("{} registered: pid {}, {} compute threads, workers {} in [{}, {}]", name(id),
               r->pid, r->computeThreads, r->workers, r->minWorkers, r->maxWorkers);
    apply(decision);
    return;
  }
  TL_REQUIRE(!connection.jobId.empty(), "the first message must be register");
  if (auto* p = std::get_if<ReportMessage>(&message)) {
    log_->debug(
        "{} report: {} workers, {} images in {:.3f} busy s, {} images in {:.3f} "
        "compute s, wait {:.3f} s",
        name(id), p->loader.workers, p->loader.images, p->loader.busySeconds, p->compute.images,
        p->compute.computeSeconds, p->waitSeconds);
    apply(balancer_.report(connection.jobId, *p));
    return;
  }
  drop(id, "job left");
}

void CoordinatorServer::apply(const Decision& decision) {
  if (!decision.reason.empty()) log_->info("{}", decision.reason);
  for (const auto& [job, workers] : decision.changes) {
    auto cache = decision.cacheChanges.find(job);
    const int64_t cacheBytes = cache == decision.cacheChanges.end() ? -1 : cache->second;
    for (auto& [id, connection] : connections_) {
      if (connection.jobId != job || dropped_.count(id)) continue;
      connection.out += encode(CoordinatorMessage{AssignMessage{workers, cacheBytes}});
      flush(id, connection);
    }
  }
}

void CoordinatorServer::flush(int id, Connection& connection) {
  while (!connection.out.empty()) {
    ssize_t n = ::send(connection.fd.get(), connection.out.data(), connection.out.size(),
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      drop(id, std::string("send failed: ") + std::strerror(errno));
      return;
    }
    connection.out.erase(0, size_t(n));
  }
  if (connection.out.size() > kMaxPendingOutput) drop(id, "peer does not read its messages");
}

void CoordinatorServer::drop(int id, const std::string& why) { dropped_.emplace(id, why); }

void CoordinatorServer::reject(int id, const std::string& why, const std::string& line) {
  log_->error("{} rejected: {}; message: {}", name(id), why, snippet(line));
  auto it = connections_.find(id);
  if (it != connections_.end()) {
    std::string error = encode(CoordinatorMessage{ErrorMessage{why}});
    (void)!::send(it->second.fd.get(), error.data(), error.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  drop(id, "malformed or rejected message");
}

void CoordinatorServer::checkLiveness() {
  for (auto& [id, connection] : connections_) {
    if (connection.pid <= 0 || dropped_.count(id)) continue;
    if (::kill(pid_t(connection.pid), 0) != 0 && errno == ESRCH) {
      drop(id, "process " + std::to_string(connection.pid) + " no longer exists");
    }
  }
}

}  // namespace tl::coordinator
