#include "tools/sched/resources/resource_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.h"
#include "coordinator/joint_allocator.h"

namespace tl::sched {
namespace {

struct Share {
  int cpus = 0;
  double cacheBytes = 0;
};

struct Server {
  ResourceServer spec;
  int freeGpus = 0;
  std::vector<size_t> jobs;  // indices of the running jobs
};

std::vector<coordinator::JointDemand> demands(const std::vector<ResourceJob>& jobs,
                                         const std::vector<size_t>& on) {
  std::vector<coordinator::JointDemand> out;
  for (size_t j : on) out.push_back({jobs[j].loader, jobs[j].cache, jobs[j].gpus, jobs[j].maxCpus});
  return out;
}

class Simulation {
 public:
  Simulation(const std::vector<ResourceJob>& jobs, const ResourceSimOptions& options)
      : jobs_(jobs), options_(options), share_(jobs.size()), left_(jobs.size()) {
    TL_REQUIRE(!options.servers.empty(), "resource simulation: no server");
    TL_REQUIRE(options.policy == "resource-aware" || options.policy == "gpu-proportional",
               "unknown resource policy '", options.policy,
               "' (known: resource-aware, gpu-proportional)");
    aware_ = options.policy == "resource-aware";
    int most = 0;
    for (const ResourceServer& s : options.servers) {
      TL_REQUIRE(s.gpus >= 1 && s.cpus >= s.gpus && s.memoryBytes >= 0,
                 "resource simulation: a server needs >= 1 GPU, a core per GPU, memory >= 0");
      servers_.push_back({s, s.gpus, {}});
      most = std::max(most, s.gpus);
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
      TL_REQUIRE(jobs[j].gpus <= most, "job ", jobs[j].id, " needs ", jobs[j].gpus,
                 " GPUs; the largest server has ", most);
      left_[j] = jobs[j].work;
    }
  }

  ResourceSimResult run() {
    ResourceSimResult result;
    result.policy = options_.policy;
    for (const ResourceJob& j : jobs_) result.jobs.push_back({j.id, j.kind, j.arrival});
    std::vector<size_t> order(jobs_.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return jobs_[a].arrival < jobs_[b].arrival; });
    size_t nextArrival = 0;
    std::vector<size_t> waiting;
    double now = 0;
    size_t done = 0;
    while (done < jobs_.size()) {
      // The next event: an arrival or the first completion at the current rates.
      double next = nextArrival < order.size() ? jobs_[order[nextArrival]].arrival
                                               : std::numeric_limits<double>::infinity();
      for (const Server& s : servers_) {
        for (size_t j : s.jobs) next = std::min(next, now + left_[j] / rate(j));
      }
      TL_CHECK(std::isfinite(next), "resource simulation stalled with ", jobs_.size() - done,
               " jobs left");
      const double dt = next - now;
      now = next;
      for (size_t si = 0; si < servers_.size(); ++si) {
        Server& s = servers_[si];
        bool changed = false;
        for (size_t k = 0; k < s.jobs.size();) {
          const size_t j = s.jobs[k];
          left_[j] -= rate(j) * dt;
          if (left_[j] <= 1e-9 * jobs_[j].work) {
            result.jobs[j].finish = now;
            s.freeGpus += jobs_[j].gpus;
            s.jobs.erase(s.jobs.begin() + long(k));
            ++done;
            changed = true;
          } else {
            ++k;
          }
        }
        if (changed) reallocate(si);
      }
      while (nextArrival < order.size() && jobs_[order[nextArrival]].arrival <= now) {
        waiting.push_back(order[nextArrival++]);
      }
      for (auto it = waiting.begin(); it != waiting.end();) {
        const int si = place(*it);
        if (si < 0) {
          ++it;
          continue;
        }
        result.jobs[*it].start = now;
        result.jobs[*it].server = si;
        servers_[size_t(si)].jobs.push_back(*it);
        servers_[size_t(si)].freeGpus -= jobs_[*it].gpus;
        reallocate(size_t(si));
        it = waiting.erase(it);
      }
    }
    double sum = 0;
    std::vector<double> byKind(3, 0), count(3, 0);
    const char* kinds[] = {"cpu-hungry", "memory-hungry", "insensitive"};
    for (const ResourceJobResult& r : result.jobs) {
      sum += r.jct();
      result.makespan = std::max(result.makespan, r.finish);
      for (int k = 0; k < 3; ++k) {
        if (r.kind == kinds[k]) {
          byKind[size_t(k)] += r.jct();
          ++count[size_t(k)];
        }
      }
    }
    result.meanJct = sum / double(result.jobs.size());
    for (int k = 0; k < 3; ++k) {
      result.meanJctByKind.push_back(count[size_t(k)] > 0 ? byKind[size_t(k)] / count[size_t(k)] : 0);
    }
    return result;
  }

 private:
  double rate(size_t j) const { return jobs_[j].rate(share_[j].cpus, share_[j].cacheBytes); }

  coordinator::JointBudget budget(const Server& s) const {
    return {s.spec.cpus, int64_t(s.spec.memoryBytes), options_.memoryUnits};
  }

  // The server's predicted total with `on` running, split by the policy; writes the shares
  // when `apply`.
  double split(const Server& s, const std::vector<size_t>& on, bool apply) {
    if (on.empty()) return 0;
    std::vector<Share> shares(on.size());
    double total = 0;
    if (aware_) {
      const coordinator::JointSplit best = coordinator::allocateJoint(demands(jobs_, on), budget(s));
      for (size_t k = 0; k < on.size(); ++k) shares[k] = {best.workers[k], double(best.cacheBytes[k])};
      total = best.predicted;
    } else {
      for (size_t k = 0; k < on.size(); ++k) {
        const double part = double(jobs_[on[k]].gpus) / s.spec.gpus;
        shares[k] = {std::max(1, int(std::floor(s.spec.cpus * part))), s.spec.memoryBytes * part};
        total += jobs_[on[k]].rate(shares[k].cpus, shares[k].cacheBytes);
      }
    }
    if (apply) {
      for (size_t k = 0; k < on.size(); ++k) share_[on[k]] = shares[k];
    }
    return total;
  }

  void reallocate(size_t si) { split(servers_[si], servers_[si].jobs, true); }

  // The server job j starts on now; -1 when none has its GPUs free.
  int place(size_t j) {
    int chosen = -1;
    double bestGain = -std::numeric_limits<double>::infinity();
    for (size_t si = 0; si < servers_.size(); ++si) {
      const Server& s = servers_[si];
      if (s.freeGpus < jobs_[j].gpus) continue;
      if (!aware_) {  // best fit: the fewest free GPUs
        if (chosen < 0 || s.freeGpus < servers_[size_t(chosen)].freeGpus) chosen = int(si);
        continue;
      }
      std::vector<size_t> with = s.jobs;
      with.push_back(j);
      const double gain = split(s, with, false) - split(s, s.jobs, false);
      const double relative = gain / bestRate(jobs_[j]);
      if (relative > bestGain + 1e-9) {
        bestGain = relative;
        chosen = int(si);
      }
    }
    return chosen;
  }

  const std::vector<ResourceJob>& jobs_;
  const ResourceSimOptions& options_;
  bool aware_ = true;
  std::vector<Server> servers_;
  std::vector<Share> share_;
  std::vector<double> left_;
};

}  // namespace

const std::vector<std::string>& resourcePolicyNames() {
  static const std::vector<std::string> names{"gpu-proportional", "resource-aware"};
  return names;
}

ResourceSimResult simulateResources(const std::vector<ResourceJob>& jobs,
                                    const ResourceSimOptions& options) {
  return Simulation(jobs, options).run();
}

}  // namespace tl::sched
