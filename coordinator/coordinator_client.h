// The job side of the node coordinator: registers the job, forwards its measurement windows
// and hands the training thread the pool sizes the coordinator assigns.
//
// Integration in a training loop (the client never touches the loader itself):
//
//   coordinator::CoordinatorClient client({runDir, "resnet/0", computeThreads, workers, 1, 8, bin});
//   client.connect();                        // false: not (yet) registered; the job runs as it is
//   ...every window (e.g. ~1 s of steps, one pool size):
//   client.report({loader.workers(), busyDelta, producedDelta}, {computeDelta, consumedDelta},
//                 waitDelta);
//   if (auto w = client.pendingWorkers()) loader.setWorkers(*w);   // then start a new window
//
// A window should cover a single pool size: start the next one after setWorkers.
//
// Failure behaviour: when the coordinator cannot be reached, does not answer, goes away or
// rejects the job, the job keeps its current pool size; the client logs a warning once per
// outage (spdlog's default logger), never throws from report() or pendingWorkers(), never blocks
// the training thread, and is immune to SIGPIPE (MSG_NOSIGNAL). connect() waits at most
// connectTimeoutSeconds, so a coordinator that is alive but does not accept (stopped, out
// of descriptors) delays the job's start by that much at most. With reconnectSeconds > 0 it
// retries in the background (starting a coordinator through ensureCoordinator when
// coordinatorBinary is set) and registers with the size the job runs now, so a job that
// started without its coordinator attaches when it answers. A rejection (a duplicate job id,
// bad limits) is permanent: no retries.
//
// Threading: connect(), report(), pendingWorkers() and the accessors may be called from any
// thread. A background I/O thread, started by connect(), owns the socket and makes every
// connection attempt; report() only queues. The destructor sends "leave" (waiting at most ~1 s
// for the socket) and joins that thread, which may first finish an attempt in progress (at most
// connectTimeoutSeconds, or ensureCoordinator's timeout while it starts a coordinator).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "coordinator/protocol.h"
#include "coordinator/throughput_model.h"
#include "coordinator/unix_socket.h"

namespace tl::coordinator {

struct CoordinatorClientOptions {
  std::string runDir;  // e.g. defaultRunDir()
  std::string jobId;   // unique on the node, e.g. "<name>/<rank>"
  int computeThreads = 1;
  int initialWorkers = 1;  // the pool size the job starts with
  int minWorkers = 1;
  int maxWorkers = 8;
  std::string coordinatorBinary;     // set: start tl-coordinator when none listens
  double reconnectSeconds = 2;       // 0: stay disconnected once the coordinator is lost
  double connectTimeoutSeconds = 1;  // longest wait in connect() and in one connection attempt
  int64_t cacheBytes = -1;  // the dataset cache's budget at start; -1: the job has no cache
  int64_t cacheSamples = 0;  // samples the cache covers
};

class CoordinatorClient {
 public:
  // InputError for an empty job id or limits outside 1 <= min <= max.
  explicit CoordinatorClient(CoordinatorClientOptions options);
  ~CoordinatorClient();
  CoordinatorClient(const CoordinatorClient&) = delete;
  CoordinatorClient& operator=(const CoordinatorClient&) = delete;

  // Connects (starting a coordinator first when coordinatorBinary is set) and registers, on
  // the background thread; waits for that at most connectTimeoutSeconds. False when it failed
  // or did not finish in time (logged once); the attempt in progress goes on, and the thread
  // keeps retrying if allowed.
  bool connect();
  // Queues one measurement window; dropped while disconnected. Never blocks.
  void report(const LoaderObservation& loader, const ComputeObservation& compute,
              double waitSeconds, const CacheObservation& cache = {});
  // A pool size assigned since the last call that differs from the last one returned (or
  // from initialWorkers); nullopt otherwise. Each size is returned once.
  std::optional<int> pendingWorkers();
  // A cache budget assigned since the last call, once; nullopt otherwise (and always for a
  // job without a cache). Registering again after a reconnect announces the last one returned.
  std::optional<int64_t> pendingCacheBytes();

  bool connected() const { return connected_.load(); }
  bool rejected() const { return rejected_.load(); }
  // The pool size the job runs (as far as the client knows): the last one returned.
  int currentWorkers() const;

 private:
  bool tryConnect();  // I/O thread
  void ioLoop();
  void receive();
  void flushOutput();
  void lose(const std::string& why);
  void wake();
  void warnOnce(const std::string& message);

  const CoordinatorClientOptions options_;
  Fd socket_;  // owned by the I/O thread once it runs
  Fd wakeRead_, wakeWrite_;
  LineBuffer in_;
  std::string out_;
  std::thread io_;

  mutable std::mutex mutex_;  // guards the members below
  std::deque<std::string> queue_;
  std::optional<int> pending_;
  int lastDelivered_;
  std::optional<int64_t> pendingCache_;
  int64_t lastCacheDelivered_;
  std::condition_variable firstAttemptDone_;
  bool firstAttempted_ = false;
  bool stopping_ = false;
  bool warned_ = false;

  std::atomic<bool> connected_{false};
  std::atomic<bool> rejected_{false};
};

}  // namespace tl::coordinator
