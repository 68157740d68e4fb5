// Records what one process consumes while it trains: compute busy/idle, memory, and the bytes
// it sends and receives through its communicators; reduces them to the twelve metrics
// (twelve_metrics.h), per window of steps and over the run.
//
// Signals:
//  - compute: on a GPU, NVML's utilisation; on a CPU, the process's CPU time outside collective
//    calls divided by (elapsed time x compute threads), sampled every `samplePeriodSeconds` by a
//    sampler thread;
//  - memory: on a GPU, NVML's device memory in use; on a CPU, the resident set (/proc/self/statm);
//  - TX/RX: the communicator calls themselves (TrafficLog: exact start, end and bytes), counted
//    by wrapping the communicators the executor uses (countTraffic).
// Per network interface, /proc/net/dev's byte counters over the run, when readable.
//
// Threading: start(), markStep() and finish() on the training thread (the one that makes the
// collective calls); the sampler thread only appends samples under a mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/usage/burst_tracker.h"
#include "runtime/usage/traffic.h"
#include "runtime/usage/twelve_metrics.h"

namespace tl::usage {

struct UsageOptions {
  int computeThreads = 1;
  bool gpu = false;         // read compute and memory through NVML (when it opens)
  int deviceIndex = 0;
  double samplePeriodSeconds = 0.005;
  int64_t windowSteps = 10;  // steps per metrics.jsonl window
};

class Nvml;

class UsageRecorder {
 public:
  // Takes the memory floor: the process's memory before the job is set up (construct it before
  // the model, data and optimizer), above which memory counts as in a burst.
  explicit UsageRecorder(UsageOptions options);
  ~UsageRecorder();
  UsageRecorder(const UsageRecorder&) = delete;
  UsageRecorder& operator=(const UsageRecorder&) = delete;

  // Where the wrapped communicators record their calls.
  TrafficLog& traffic() { return traffic_; }

  // Starts sampling (call right before training).
  void start();
  // At a step boundary: the record of the window that closes here, if one does (every
  // windowSteps steps after the first boundary).
  std::optional<nlohmann::json> markStep(int64_t stepsDone);
  // Stops sampling; the run's figures from the first to the last step boundary (the steady
  // state: start-up and the final evaluation left out) with totals and thresholds.
  nlohmann::json finish();

  // The twelve metrics of the run so far (steady state), in kMetricNames order.
  TwelveMetrics twelve() const;
  // The same with the steps and bytes they cover (as a window's record); first_step ==
  // last_step when fewer than two boundaries were marked.
  nlohmann::json steadyFigures() const;
  bool started() const { return started_; }

 private:
  struct Sample {
    double t = 0;
    double processCpu = 0;
    double callCpu = 0;
    double computeValue = -1;  // NVML utilisation, < 0 on a CPU
    double memoryMb = 0;
  };
  struct Trackers {
    BurstTracker compute{kComputeBusyThreshold};
    BurstTracker memory{0};
    BurstTracker tx{0, kTrafficJoinGapSeconds};
    BurstTracker rx{0, kTrafficJoinGapSeconds};
    int64_t sent = 0, received = 0;
    int64_t firstStep = 0, lastStep = 0;
    explicit Trackers(double memoryThreshold) : memory(memoryThreshold) {}
  };

  Sample sampleNow() const;
  void samplerLoop();
  // Feeds what arrived since the last call into the trackers (those of the steady state only
  // once the first boundary has passed).
  void drain(double until);
  static nlohmann::json figuresJson(const Trackers& t);
  static TwelveMetrics twelveOf(const Trackers& t);

  UsageOptions options_;
  TrafficLog traffic_;
  std::unique_ptr<Nvml> nvml_;
  std::string nvmlNote_;

  std::mutex mutex_;
  std::vector<Sample> pending_;  // filled by the sampler thread
  bool stop_ = false;
  std::thread sampler_;

  std::optional<Sample> last_;   // the previous sample fed
  double memoryFloorMb_ = 0;
  std::unique_ptr<Trackers> run_;     // steady state
  std::unique_ptr<Trackers> window_;
  std::unique_ptr<Trackers> steady_;  // run_ as of the last step boundary
  double lastEventEnd_ = 0;
  bool started_ = false;
  nlohmann::json interfacesAtStart_;
};

// /proc/net/dev: {"eth0": {"rx_bytes": .., "tx_bytes": ..}, ...}; empty when unreadable.
nlohmann::json readInterfaceBytes(const std::string& path = "/proc/net/dev");

}  // namespace tl::usage
