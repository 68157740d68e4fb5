// The coordinator's decisions, without any I/O: which job gets how many loader workers.
//
// Budget: --loader-cores when given, else the node's hardware cores minus the compute threads
// of the registered jobs, at least 1.
//
// Exploration. A job's a and b are identifiable only from windows at two pool sizes, so until
// a job has `exploreWindows` report windows at each of two sizes it is *exploring* and its size
// is pinned instead of allocated:
//   - its base is the fair share clamp(budget / jobs, min, max), recomputed when jobs come
//     and go;
//   - it runs at its base until it has enough windows there (windows at any size count: the
//     pool size is in each report, so windows measured before the job applied an assignment
//     are used too, and a base that moves gives the second size for free);
//   - then one step, chosen once: up when the other jobs leave a core of the budget unused
//     (typically one that another explorer's step down just freed), else down, or up anyway
//     when the base is the job's minimum (one worker above the budget for those windows).
//     Explorers thus pair up, one down and one up, and the node keeps using its budget while
//     they measure.
// A job with min == max has nothing to decide and is never explored.
//
// Level shifts. Once a job sits at one size, its windows at other sizes fade, and when its
// per-image time then moves as a whole (other load on the node, other data), the line through
// old and new windows would take the level change for a slope. So when `exploreWindows`
// windows in a row are more than `driftShare` away from the model, every remembered window is
// moved by their mean offset: the slope is kept, the level follows at once. (Such windows
// are held back until then, so a single odd window moves nothing.) A changed slope shows up
// through the ordinary fit once the job runs at other sizes again.
//
// Allocation. Jobs that finished exploring share what the explorers leave, by allocateGreedy
// on their fitted models. Hysteresis: a report alone moves the split only when the predicted
// total of those jobs grows by more than `minGain` (a share, default 3%), so noise does not
// flap pool sizes; a job arriving or leaving, an explorer changing size or finishing, or a
// split that no longer adds up to the budget re-decides unconditionally.
//
// Cache memory. Jobs that registered a dataset cache (--cache-mb) share the node's cache
// memory: `cacheBytes`, or, when 0, the sum of the budgets those jobs started with (so the
// coordinator redistributes what the jobs asked for, never more). Each report of such a job
// carries its cache window; the loader time the misses spent reading (storage_s) is taken out
// of the window's busy time before the worker model sees it, so the fitted b is the per-image
// time with every sample cached, and cache_model.h puts the reads back for any budget: the
// job's storage speed (storage_s / storage_bytes), mean sample bytes and sample count give its
// memory sensitivity. Once a fitted job has read from storage (always in its first epoch),
// cores and memory of all such jobs are split together by allocateJoint (joint_allocator.h;
// `cacheUnits` granules), with the same hysteresis; a job still exploring, or whose storage
// speed is not known yet, keeps the cache it has and that memory is left out of the split.
//
// Threading: not thread-safe; the coordinator's single event loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coordinator/allocator.h"
#include "coordinator/cache_model.h"
#include "coordinator/protocol.h"

namespace tl::coordinator {

struct BalancerOptions {
  int loaderCores = 0;      // 0: hardwareCores - sum of compute threads, at least 1
  int hardwareCores = 0;    // 0: std::thread::hardware_concurrency()
  double minGain = 0.03;    // predicted gain a move must exceed, as a share of the current total
  double forgetting = 0.9;  // per report window, for every job's ThroughputFitter
  int exploreWindows = 2;   // windows needed at each of two sizes before a job is fitted
  double driftShare = 0.3;  // per-image time this far off the model, repeatedly: level shift
  int64_t cacheBytes = 0;   // node cache memory to split; 0: the jobs' starting budgets summed
  int cacheUnits = 32;      // granules the cache memory is split in
};

struct JobSpec {
  int64_t pid = 0;
  int computeThreads = 1;
  int minWorkers = 1;
  int maxWorkers = 1;
  int workers = 1;  // what the job runs when it registers
  int64_t cacheBytes = -1;  // its dataset cache budget when it registers; -1: no cache
  int64_t samples = 0;      // samples the cache covers
};

struct Decision {
  std::map<std::string, int> changes;  // job -> new size; a new job is always included
  // job -> new cache budget; such a job is also in `changes` (with its size, maybe unchanged).
  std::map<std::string, int64_t> cacheChanges;
  std::string reason;                  // one line for the log; empty when nothing moved
};

struct JobView {
  std::string id;
  int workers = 0;
  bool exploring = false;
  bool measured = false;  // false: no report with images yet, `model` is a placeholder
  ThroughputModel model;
  int64_t cacheBytes = -1;  // -1: no cache
  CacheProfile cache;       // known(): its memory sensitivity is measured
};

class NodeBalancer {
 public:
  explicit NodeBalancer(const BalancerOptions& options);

  // InputError when the id is taken or the limits are invalid.
  Decision addJob(const std::string& id, const JobSpec& spec);
  Decision removeJob(const std::string& id);  // unknown ids are ignored
  Decision report(const std::string& id, const ReportMessage& report);

  int budget() const;
  int64_t cacheBudget() const;  // the cache memory split among the jobs
  bool hasJob(const std::string& id) const { return jobs_.count(id) > 0; }
  size_t jobCount() const { return jobs_.size(); }
  std::vector<JobView> jobs() const;  // in id order
  std::string describe() const;       // one line: every job's size, state and model

 private:
  struct Job {
    JobSpec spec;
    int assigned = 0;
    int base = 0;  // exploration size, the fair share
    int step = 0;  // the second size is base + step; 0 until chosen
    ThroughputFitter fitter;
    std::map<int, int> windowsBySize;
    std::vector<ReportMessage> offModel;  // held: consecutive windows off the model
    int64_t cacheAssigned = -1;
    // Cache windows summed: samples served, their bytes, storage bytes and read seconds.
    double cacheSamples = 0, cacheBytesServed = 0, storageBytes = 0, storageSeconds = 0;
  };
  CacheProfile cacheProfile(const Job& job) const;
  bool jointSplit() const;  // some fitted job's memory sensitivity is known
  Decision rebalanceJoint(Decision decision, bool apply, int cores, const std::string& why);
  // Feeds a window to the job's fitter, handling level shifts; returns the shift made (s per
  // image), 0 for none.
  double absorb(Job& job, const ReportMessage& report, bool exploringJob);
  // Sizes with at least exploreWindows windows; exploring while fewer than 2 (and min < max).
  int measuredSizes(const Job& job) const;
  bool exploring(const Job& job) const;
  int explorationTarget(const std::string& id, Job& job);
  void updateBases();
  Decision rebalance(bool force, const std::string& why);

  BalancerOptions options_;
  std::map<std::string, Job> jobs_;
};

}  // namespace tl::coordinator
