#include "tools/sched/real/real_plan.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/check.h"
#include "tools/mpirun/mpirun_command.h"

namespace tl::sched {
namespace {

std::string factorText(double f) {
  std::ostringstream out;
  out << f;
  return out.str();
}

}  // namespace

int64_t stepsOf(const JobSpec& job, int batch) {
  TL_CHECK_GE(batch, 1);
  const double global = double(batch) * job.logicalWorkers();
  return std::max<int64_t>(1, int64_t(std::ceil(job.work / global - 1e-9)));
}

std::vector<std::string> launchArgv(const RealJobSettings& s, const JobSpec& job,
                                    const SlotKind& kind, int processes, const std::string& dir) {
  TL_CHECK(processes >= 1 && processes <= job.maxGpus, "job ", job.id, ": ", processes, " processes");
  mpirun::LaunchCommand c;
  c.mpirun = s.mpirun;
  c.oversubscribe = true;
  c.allowRunAsRoot = s.allowRunAsRoot;
  c.bindTo = "none";
  c.processes = processes;
  c.tlLaunch = s.tlLaunch;
  std::vector<std::string>& a = c.launchFlags;
  // A trace's model is a built-in architecture, or a TorchScript file (a name ending in .pt).
  const bool scripted = job.model.size() > 3 && job.model.compare(job.model.size() - 3, 3, ".pt") == 0;
  a = {scripted ? "--model-file" : "--model", job.model, "--logical-workers",
       std::to_string(job.logicalWorkers()), "--batch", std::to_string(s.batch), "--steps",
       std::to_string(stepsOf(job, s.batch))};
  if (kind.slowdown != 1) {
    // One factor per process; processes a grow starts take the last one (the same kind).
    std::string f;
    for (int i = 0; i < processes; ++i) f += (i ? "," : "") + factorText(kind.slowdown);
    a.insert(a.end(), {"--emulate-slowdown", f});
  }
  a.insert(a.end(), s.launchFlags.begin(), s.launchFlags.end());
  a.insert(a.end(), {"--output-dir", dir});
  return mpirun::argvOf(c);
}

std::vector<std::string> growArgv(const RealJobSettings& s, const std::string& dir, int processes) {
  return {s.tlCtl, "rescale", dir, "--processes", std::to_string(processes)};
}

std::vector<std::string> shrinkArgv(const RealJobSettings& s, const std::string& dir,
                                    const std::vector<int>& ranks) {
  TL_CHECK(!ranks.empty());
  std::string list;
  for (int r : ranks) {
    TL_CHECK_GE(r, 1, "rank 0 never leaves a job");
    list += (list.empty() ? "" : ",") + std::to_string(r);
  }
  return {s.tlCtl, "rescale", dir, "--remove-ranks", list};
}

void requireRealPolicy(const std::string& policy) {
  if (policy == "yarn-cs" || policy == "elastic" || policy == "hetero-goodput") return;
  if (policy == "las")
    inputError("policy las preempts jobs; tl-sched runs hetero-goodput, elastic or yarn-cs (a "
               "real job's rank 0 cannot be moved or stopped in place)");
  if (policy == "elastic-hetero")
    inputError("policy elastic-hetero mixes slot kinds in one job; tl-sched runs hetero-goodput, "
               "elastic or yarn-cs (a job emulates one kind's speed on all its processes)");
  if (policy == "goodput")
    inputError(
        "policy goodput moves jobs between slot kinds and mixes them; tl-sched runs "
        "hetero-goodput (goodput's objective, in place), elastic or yarn-cs");
  inputError("unknown policy '", policy, "' for tl-sched (it runs hetero-goodput, elastic or yarn-cs)");
}

void checkRealTrace(const std::vector<JobSpec>& jobs, const SlotTable& slots) {
  int largest = 0;
  for (const auto& k : slots.kinds()) largest = std::max(largest, k.count);
  for (const auto& j : jobs) {
    TL_REQUIRE(j.minGpus <= largest, "job ", j.id, " needs at least ", j.minGpus,
               " slots of one kind but the largest kind has ", largest);
    TL_REQUIRE(j.gangGpus() <= largest, "job ", j.id, " asks for a gang of ", j.gangGpus(),
               " slots of one kind but the largest kind has ", largest);
    TL_REQUIRE(j.logicalWorkers() >= j.maxGpus, "job ", j.id, " has ", j.logicalWorkers(),
               " ESTs, fewer than its max_gpus ", j.maxGpus);
  }
}

Allocation heldBy(const RealJobState& job, const SlotTable& table) {
  Allocation a(table.kinds().size(), 0);
  for (int s : job.slots) ++a[size_t(table.kindOf(s))];
  return a;
}

std::string unrealisable(const Allocation& want, const RealJobState& job, const SlotTable& table) {
  TL_CHECK_EQ(want.size(), table.kinds().size());
  std::vector<std::string> kinds;
  for (size_t k = 0; k < want.size(); ++k)
    if (want[k] > 0) kinds.push_back(table.kinds()[k].name);
  std::string given;
  for (size_t k = 0; k < want.size(); ++k)
    if (want[k] > 0) given += (given.empty() ? "" : " + ") + std::to_string(want[k]) + " " + table.kinds()[k].name;
  if (job.slots.empty())
    return kinds.size() > 1 ? "given " + given + ": a job runs on one kind" : "";
  const int kind = table.kindOf(job.slots[0]);
  const std::string& own = table.kinds()[size_t(kind)].name;
  if (kinds.empty()) return "given no slot: a running job cannot be preempted in place";
  if (kinds.size() > 1 || kinds[0] != own)
    return "given " + given + ": it runs on " + own + " (rank 0 stays)";
  if (want[size_t(kind)] > job.spec->maxGpus) return "given " + given + ": more than max_gpus";
  return "";
}

std::vector<RealAction> realise(const std::vector<Allocation>& want,
                                const std::vector<RealJobState>& jobs, SlotTable& table,
                                std::vector<std::string>* unrealised) {
  TL_CHECK_EQ(want.size(), jobs.size());
  if (unrealised) unrealised->assign(jobs.size(), "");
  std::vector<RealAction> shrinks, takes;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const RealJobState& j = jobs[i];
    const Allocation& w = want[i];
    TL_CHECK_EQ(w.size(), table.kinds().size());
    const std::string& id = j.spec->id;
    if (j.busy) continue;
    if (unrealised) (*unrealised)[i] = unrealisable(w, j, table);
    if (j.slots.empty()) {
      // A start: the kind the policy gave most of (single-kind policies give one).
      int kind = -1;
      for (size_t k = 0; k < w.size(); ++k)
        if (w[k] > 0 && (kind < 0 || w[k] > w[size_t(kind)])) kind = int(k);
      if (kind < 0) continue;
      const int n = std::min({w[size_t(kind)], table.freeOf(kind), j.spec->maxGpus});
      if (n < j.spec->minGpus) continue;
      takes.push_back({RealAction::Start, i, table.take(kind, n, id), {}});
      continue;
    }
    if (!j.serving) continue;
    // Running: it keeps rank 0's kind; what the policy gives it elsewhere cannot be used, and
    // nothing can take rank 0 away (a preemption or a move keeps the job where it is).
    const int kind = table.kindOf(j.slots[0]);
    const int held = int(j.slots.size());
    const int target = std::clamp(w[size_t(kind)], std::max(1, j.spec->minGpus), j.spec->maxGpus);
    if (target < held) {
      RealAction a{RealAction::Shrink, i, {}, {}};
      for (int r = held - 1; r >= target; --r) a.removeRanks.insert(a.removeRanks.begin(), r);
      shrinks.push_back(std::move(a));
    } else if (target > held) {
      const int n = std::min(target - held, table.freeOf(kind));
      if (n > 0) takes.push_back({RealAction::Grow, i, table.take(kind, n, id), {}});
    }
  }
  shrinks.insert(shrinks.end(), takes.begin(), takes.end());
  return shrinks;
}

}  // namespace tl::sched
