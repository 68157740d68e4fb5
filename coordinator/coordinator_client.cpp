#include "coordinator/coordinator_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/check.h"
#include "coordinator/ensure_coordinator.h"

namespace tl::coordinator {

namespace {

constexpr size_t kMaxQueuedReports = 256;  // ~minutes of windows; older ones are dropped
constexpr int kLeaveTimeoutMs = 1000;
constexpr size_t kMaxUnsentBytes = 1 << 20;

}  // namespace

CoordinatorClient::CoordinatorClient(CoordinatorClientOptions options)
    : options_(std::move(options)),
      lastDelivered_(options_.initialWorkers),
      lastCacheDelivered_(options_.cacheBytes) {
  TL_REQUIRE(!options_.jobId.empty(), "coordinator client: the job id is empty");
  TL_REQUIRE(options_.minWorkers >= 1 && options_.maxWorkers >= options_.minWorkers,
             "coordinator client: need 1 <= min workers <= max workers, got ", options_.minWorkers,
             " and ", options_.maxWorkers);
  int pipeFds[2];
  TL_CHECK(::pipe2(pipeFds, O_CLOEXEC | O_NONBLOCK) == 0, std::strerror(errno));
  wakeRead_.reset(pipeFds[0]);
  wakeWrite_.reset(pipeFds[1]);
}

CoordinatorClient::~CoordinatorClient() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake();
  if (io_.joinable()) io_.join();
}

int CoordinatorClient::currentWorkers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lastDelivered_;
}

bool CoordinatorClient::connect() {
  if (io_.joinable()) return connected();
  io_ = std::thread([this] { ioLoop(); });
  bool answered;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    answered = firstAttemptDone_.wait_for(
        lock, std::chrono::duration<double>(options_.connectTimeoutSeconds),
        [this] { return firstAttempted_; });
  }
  if (!answered) {
    warnOnce(str("the node coordinator at ", socketPath(options_.runDir), " did not answer within ",
                 options_.connectTimeoutSeconds, " s; training with ", currentWorkers(),
                 " loader workers until it does"));
  }
  return connected();
}

void CoordinatorClient::warnOnce(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (warned_) return;
  warned_ = true;
  spdlog::warn("{}", message);
}

bool CoordinatorClient::tryConnect() {
  try {
    // Either way the run directory is checked: the job trusts the socket found in it.
    if (!options_.coordinatorBinary.empty()) {
      ensureCoordinator(options_.runDir, options_.coordinatorBinary);
    } else {
      openRunDir(options_.runDir, false);
    }
  } catch (const std::exception& e) {
    warnOnce(str("node coordinator unavailable (", e.what(), "); keeping ", currentWorkers(),
                 " loader workers"));
    return false;
  }
  Fd fd = connectUnix(socketPath(options_.runDir), options_.connectTimeoutSeconds);
  RegisterMessage hello{options_.jobId,      int64_t(::getpid()), options_.computeThreads,
                        options_.minWorkers, options_.maxWorkers, currentWorkers()};
  if (options_.cacheBytes >= 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    hello.cacheBytes = lastCacheDelivered_;
    hello.samples = std::max<int64_t>(1, options_.cacheSamples);
  }
  if (!fd.valid() || !sendAll(fd.get(), encode(JobMessage{hello}))) {
    std::string why = errno == EAGAIN ? "it does not accept connections" : std::strerror(errno);
    warnOnce(str("no node coordinator at ", socketPath(options_.runDir), " (", why, "); keeping ",
                 currentWorkers(), " loader workers"));
    return false;
  }
  setNonBlocking(fd.get());
  socket_ = std::move(fd);
  in_ = LineBuffer();
  out_.clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.clear();  // windows measured while disconnected belong to no registration
    warned_ = false;
  }
  connected_ = true;
  spdlog::info("registered {} with the node coordinator at {}", options_.jobId,
               socketPath(options_.runDir));
  return true;
}

void CoordinatorClient::report(const LoaderObservation& loader, const ComputeObservation& compute,
                               double waitSeconds, const CacheObservation& cache) {
  if (!connected_) return;
  std::string line = encode(JobMessage{ReportMessage{loader, compute, waitSeconds, cache}});
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.size() >= kMaxQueuedReports) queue_.pop_front();
    queue_.push_back(std::move(line));
  }
  wake();
}

std::optional<int> CoordinatorClient::pendingWorkers() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<int> workers = pending_;
  if (workers) lastDelivered_ = *workers;
  pending_.reset();
  return workers;
}

std::optional<int64_t> CoordinatorClient::pendingCacheBytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<int64_t> bytes = pendingCache_;
  if (bytes) lastCacheDelivered_ = *bytes;
  pendingCache_.reset();
  return bytes;
}

void CoordinatorClient::wake() {
  char byte = 1;
  (void)!::write(wakeWrite_.get(), &byte, 1);  // a full pipe already wakes the thread
}

void CoordinatorClient::lose(const std::string& why) {
  socket_.reset();
  connected_ = false;
  warnOnce(str("lost the node coordinator (", why, "); keeping ", currentWorkers(),
               " loader workers", options_.reconnectSeconds > 0 && !rejected_ ? ", retrying" : ""));
}

void CoordinatorClient::ioLoop() {
  tryConnect();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    firstAttempted_ = true;
  }
  firstAttemptDone_.notify_all();
  for (;;) {
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping = stopping_;
      if (socket_.valid()) {
        for (std::string& line : queue_) out_ += line;
      }
      queue_.clear();
    }
    if (stopping) break;
    const bool online = socket_.valid();
    if (!online && (options_.reconnectSeconds <= 0 || rejected_)) {
      pollfd wakeOnly{wakeRead_.get(), POLLIN, 0};
      ::poll(&wakeOnly, 1, -1);
    } else if (!online) {
      pollfd wakeOnly{wakeRead_.get(), POLLIN, 0};
      if (::poll(&wakeOnly, 1, int(options_.reconnectSeconds * 1000)) == 0) tryConnect();
    } else {
      pollfd fds[2] = {{wakeRead_.get(), POLLIN, 0},
                       {socket_.get(), short(POLLIN | (out_.empty() ? 0 : POLLOUT)), 0}};
      ::poll(fds, 2, 1000);
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) receive();
      if (socket_.valid() && !out_.empty()) flushOutput();
    }
    char drain[64];
    while (::read(wakeRead_.get(), drain, sizeof(drain)) > 0) {
    }
  }
  if (!socket_.valid()) return;
  // Leave politely; the coordinator treats a closed connection as leaving anyway.
  out_ += encode(JobMessage{LeaveMessage{}});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLeaveTimeoutMs);
  while (socket_.valid() && !out_.empty() && std::chrono::steady_clock::now() < deadline) {
    pollfd out{socket_.get(), POLLOUT, 0};
    ::poll(&out, 1, 50);
    flushOutput();
  }
  socket_.reset();
  connected_ = false;
}

void CoordinatorClient::receive() {
  char buffer[4096];
  for (;;) {
    ssize_t n = ::recv(socket_.get(), buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      lose(n == 0 ? "it closed the connection" : std::strerror(errno));
      return;
    }
    try {
      in_.append(buffer, size_t(n));
      std::string line;
      while (in_.nextLine(line)) {
        CoordinatorMessage message = decodeCoordinatorMessage(line);
        if (auto* error = std::get_if<ErrorMessage>(&message)) {
          rejected_ = true;
          spdlog::error("the node coordinator rejected {}: {}", options_.jobId, error->message);
          continue;  // it closes the connection next
        }
        const AssignMessage& assign = std::get<AssignMessage>(message);
        const int workers = assign.workers;
        std::lock_guard<std::mutex> lock(mutex_);
        if (assign.cacheBytes >= 0 && options_.cacheBytes >= 0) {
          if (assign.cacheBytes != lastCacheDelivered_) {
            pendingCache_ = assign.cacheBytes;
          } else {
            pendingCache_.reset();
          }
        }
        if (workers != lastDelivered_) {
          pending_ = workers;
        } else {
          pending_.reset();
        }
      }
    } catch (const std::exception& e) {
      lose(str("unreadable message: ", e.what()));
      return;
    }
  }
}

void CoordinatorClient::flushOutput() {
  while (!out_.empty()) {
    ssize_t n = ::send(socket_.get(), out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      lose(str("send failed: ", std::strerror(errno)));
      return;
    }
    out_.erase(0, size_t(n));
  }
  if (out_.size() > kMaxUnsentBytes) lose("it does not read what the job sends");
}

}  // namespace tl::coordinator
