// The wire protocol between training jobs and the node coordinator (tl-coordinator).
//
// Transport: a Unix-domain stream socket, <run-dir>/coordinator.sock. Each message is one JSON
// object on one line ('\n'-terminated, at most kMaxLineBytes). Unknown keys are ignored, so
// either side may add fields; a missing or ill-typed known key is an error.
//
// job -> coordinator
//   {"type":"register","protocol":1,"job":"resnet/0","pid":4242,"compute_threads":1,
//    "min_workers":1,"max_workers":8,"workers":2}
//       First message on a connection. `job` is unique among the coordinator's live jobs
//       (e.g. "<name>/<rank>"); `workers` is the pool size the job runs now.
//       A job with a dataset cache (--cache-mb) adds "cache_bytes":B (its budget now) and
//       "samples":N (samples the cache covers); the coordinator may then resize the cache.
//   {"type":"report","workers":2,"busy_s":1.9,"images_produced":480,"compute_s":0.7,
//    "images_consumed":480,"wait_s":0.25}
//       One measurement window in which the pool had `workers` threads: loader busy seconds
//       summed over them and the images they produced; device busy seconds and the images it
//       consumed; seconds the training thread waited for data.
//       A job with a cache adds, for the same window: "cache_hits", "cache_misses",
//       "hit_bytes" (bytes served from the cache), "storage_bytes" and "storage_s" (bytes the
//       misses read from storage and the loader threads' time reading them; busy_s includes
//       that time) and "cache_bytes" (the budget during the window).
//   {"type":"leave"}
//       The job is done; the coordinator closes the connection. A closed connection, or a
//       job whose pid no longer exists, counts as leaving too.
//
// coordinator -> job
//   {"type":"assign","workers":3}
//       Run this many loader workers from now on. Sent once right after register (possibly
//       equal to the job's current size) and whenever the job's share changes.
//   {"type":"assign","workers":3,"cache_bytes":B}
//       The same, and resize the dataset cache to B bytes (only to a job that registered a
//       cache; `workers` is then the size the job already has when only the cache moves).
//   {"type":"error","message":"..."}
//       The coordinator rejected the last message and closes the connection after it.
//
// Validation is strict (types; ranges: 1 <= min_workers <= max_workers, counts >= 0, seconds
// finite and >= 0), so a bad peer is turned away with a message naming the field
// instead of steering the allocation with garbage.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "coordinator/throughput_model.h"

namespace tl::coordinator {

constexpr int kProtocolVersion = 1;
constexpr size_t kMaxLineBytes = 64 * 1024;

struct RegisterMessage {
  std::string job;
  int64_t pid = 0;
  int computeThreads = 1;
  int minWorkers = 1;
  int maxWorkers = 1;
  int workers = 1;
  int64_t cacheBytes = -1;  // -1: the job has no dataset cache
  int64_t samples = 0;      // samples its cache covers (with a cache)
};

// One window of the dataset cache, alongside the loader window.
struct CacheObservation {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t hitBytes = 0;
  int64_t storageBytes = 0;
  double storageSeconds = 0;
  int64_t budgetBytes = -1;  // -1: no cache (the fields above are then absent on the wire)
};

struct ReportMessage {
  LoaderObservation loader;
  ComputeObservation compute;
  double waitSeconds = 0;
  CacheObservation cache;
};

struct LeaveMessage {};

struct AssignMessage {
  int workers = 0;
  int64_t cacheBytes = -1;  // -1: the cache stays as it is
};

struct ErrorMessage {
  std::string message;
};

using JobMessage = std::variant<RegisterMessage, ReportMessage, LeaveMessage>;
using CoordinatorMessage = std::variant<AssignMessage, ErrorMessage>;

// Each returns one line, including its '\n'.
std::string encode(const JobMessage& message);
std::string encode(const CoordinatorMessage& message);

// Parse one line (without its '\n'). Throw InputError saying what is wrong: not JSON, not an
// object, an unknown type, a missing or ill-typed field, a value out of range.
JobMessage decodeJobMessage(const std::string& line);
CoordinatorMessage decodeCoordinatorMessage(const std::string& line);

// Splits a byte stream into lines. Not thread-safe.
class LineBuffer {
 public:
  // Appends bytes; InputError once an unterminated line exceeds kMaxLineBytes.
  void append(const char* data, size_t size);
  // Moves the next complete line (without '\n') to `line`; false when none is complete.
  bool nextLine(std::string& line);

 private:
  std::string buffer_;
  size_t start_ = 0;
};

}  // namespace tl::coordinator
