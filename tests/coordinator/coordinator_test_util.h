// Shared helpers for the coordinator tests: synthetic jobs that follow a known throughput model,
// waiting with a deadline, and a raw protocol connection.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "coordinator/protocol.h"
#include "coordinator/throughput_model.h"
#include "coordinator/unix_socket.h"

namespace tl::coordinator::test_util {

// One measurement window of a job that behaves exactly like `truth` with `workers` threads,
// with multiplicative noise of relative size `noise` on the loader's per-image time.
inline ReportMessage syntheticWindow(const ThroughputModel& truth, int workers, double seconds,
                                     std::mt19937* rng = nullptr, double noise = 0) {
  double perImage = truth.a * workers + truth.b;
  if (rng && noise > 0) perImage *= 1 + std::normal_distribution<double>(0, noise)(*rng);
  ReportMessage r;
  double consumed = truth.predict(workers) * seconds;
  r.loader.workers = workers;
  r.loader.images = int64_t(std::llround(consumed));
  r.loader.busySeconds = perImage * double(r.loader.images);
  r.compute.images = r.loader.images;
  r.compute.computeSeconds =
      std::isinf(truth.computeRate) ? 0 : double(r.compute.images) / truth.computeRate;
  r.waitSeconds = std::max(0.0, seconds - r.compute.computeSeconds);
  return r;
}

// A fresh run directory for a coordinator: under $TL_TEST_TMP like every test's files, or
// under /tmp when that path would make the socket's path too long for a sockaddr_un. Mode 0700
// whatever the umask: a group-writable folder (umask 002) would be refused.
inline std::string freshRunDir(const std::string& name) {
  const char* base = std::getenv("TL_TEST_TMP");
  std::filesystem::path dir = std::filesystem::path(base ? base : "/tmp/tl-test") / name;
  if (dir.string().size() + sizeof("/coordinator.sock") > 100) {
    dir = std::filesystem::path("/tmp") / ("tl-test-" + std::to_string(::getuid()) + "-" + name);
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  return dir.string();
}

inline bool waitFor(const std::function<bool()>& condition, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// A connection made without blocking, for a peer that may never accept: invalid (errno EAGAIN)
// when the listener's backlog is full. It sends nothing unless asked to.
inline Fd connectWithoutWaiting(const std::string& runDir) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string path = socketPath(runDir);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return Fd();
  }
  return fd;
}

// CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat.
inline double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t end = stat.rfind(')');
  if (end == std::string::npos) return -1;
  std::istringstream fields(stat.substr(end + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);  // utime, stime
  }
  return ticks / double(::sysconf(_SC_CLK_TCK));
}

// The pid a coordinator wrote to its instance lock file.
inline pid_t coordinatorPid(const std::string& dir) {
  std::ifstream in(instanceLockPath(dir));
  long pid = 0;
  in >> pid;
  return pid_t(pid);
}

// True once no coordinator holds the run directory's instance lock.
inline bool coordinatorGone(const std::string& dir) {
  Fd fd(::open(instanceLockPath(dir).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  return !fd.valid() || ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0;
}

// Stops the test's coordinator however the test ends.
struct CoordinatorCleanup {
  std::string dir;
  ~CoordinatorCleanup() {
    if (!coordinatorGone(dir) && coordinatorPid(dir) > 0) {
      ::kill(coordinatorPid(dir), SIGTERM);
      waitFor([&] { return coordinatorGone(dir); }, 5);
    }
  }
};

// A protocol peer driven byte by byte, for what CoordinatorClient would never send.
class RawConnection {
 public:
  explicit RawConnection(const std::string& runDir) : fd_(connectUnix(socketPath(runDir))) {}
  explicit RawConnection(Fd fd) : fd_(std::move(fd)) {}
  bool valid() const { return fd_.valid(); }
  bool send(const std::string& bytes) { return sendAll(fd_.get(), bytes); }
  // The next line, "" on timeout, "<closed>" when the peer closed.
  std::string readLine(double seconds = 5) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, int(left.count())) <= 0) continue;
      char chunk[4096];
      ssize_t n = ::recv(fd_.get(), chunk, sizeof(chunk), 0);
      if (n <= 0) return "<closed>";
      buffer_.append(chunk, size_t(n));
    }
  }
  std::string registerJob(const std::string& job, int64_t pid = 0, int minWorkers = 1,
                          int maxWorkers = 8, int workers = 1) {
    RegisterMessage r{job, pid, 0, minWorkers, maxWorkers, workers};
    send(encode(JobMessage{r}));
    return readLine();
  }

 private:
  Fd fd_;
  std::string buffer_;
};

inline int assignedWorkers(const std::string& line) {
  auto message = decodeCoordinatorMessage(line);
  return std::get<AssignMessage>(message).workers;
}

}  // namespace tl::coordinator::test_util
