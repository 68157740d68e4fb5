// Per-model throughput on each GPU kind and count, and a job's rate on a mixed allocation.
//
// Profile file (CSV, '#' comments): header `model,kind,gpus,samples_per_s`, one row per measured
// point, e.g. `resnet20,fast,4,3610`. A kind's rate at n GPUs is interpolated linearly between
// the listed counts; below the first point it is proportional to n, beyond the last one it
// grows with the last point's per-GPU rate (so an unmeasured count is never optimistic about
// scaling: the per-GPU rate never rises above what was measured at the largest count).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/sched/sim/workload.h"

namespace tl::sched {

class ProfileSet {
 public:
  // Parses a profile file's text; InputError "<source>:<line>: ..." for a bad row.
  static ProfileSet parse(const std::string& text, const std::string& source);
  // The profiles shipped with tl (tools/sched/sim/profiles/default.csv, compiled in).
  static ProfileSet builtin();

  bool has(const std::string& model, const std::string& kind) const;
  // Samples/s of `model` on n GPUs of `kind` (n >= 1). InputError when not profiled.
  double rate(const std::string& model, const std::string& kind, int n) const;
  std::vector<std::string> models() const;
  // InputError naming the first (model, kind) pair the cluster and jobs need that has no row.
  void requireCovers(const ClusterSpec& cluster, const std::vector<JobSpec>& jobs) const;

 private:
  std::map<std::pair<std::string, std::string>, std::map<int, double>> points_;
};

// A job's samples/s on an allocation (GPUs per cluster kind), with its ESTs placed by tl's
// planner rule (elastic/placement: integer ESTs per device minimising the slowest device's time).
// Every device of kind k computes at rate(model, k, n_total) / n_total samples/s: the job's
// scaling efficiency is that of its total size. Devices may be left without ESTs when that is
// faster. Results are cached: policies ask the same questions many times.
class ThroughputModel {
 public:
  ThroughputModel(const ClusterSpec& cluster, const ProfileSet& profiles);
  double rate(const JobSpec& job, const std::vector<int>& gpusPerKind) const;
  // Kinds ordered fastest first for this model (by single-GPU rate; ties by cluster order).
  const std::vector<int>& kindsBySpeed(const std::string& model) const;
  const ClusterSpec& cluster() const { return cluster_; }

 private:
  struct KeyHash {
    size_t operator()(const std::vector<int>& key) const;
  };
  struct PackedKey {
    uint64_t hi = 0, lo = 0;
    bool operator==(const PackedKey& o) const { return hi == o.hi && lo == o.lo; }
  };
  struct PackedHash {
    size_t operator()(const PackedKey& k) const {
      return size_t((k.hi * 0x9E3779B97F4A7C15ull) ^ (k.lo + 0x632BE59BD9B4E019ull + (k.hi >> 29)));
    }
  };
  ClusterSpec cluster_;
  ProfileSet profiles_;
  std::map<std::string, int> modelIds_;
  mutable std::unordered_map<std::vector<int>, double, KeyHash> cache_;
  mutable std::unordered_map<PackedKey, double, PackedHash> packedCache_;
  mutable std::map<std::string, std::vector<int>> kindOrder_;
};

}  // namespace tl::sched
