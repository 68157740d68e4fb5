#include "elastic/rescale/request_check.h"

#include <numeric>
#include <optional>
#include <set>

#include "common/check.h"
#include "elastic/placement/layout_text.h"

namespace tl::elastic {
namespace {

using control::Command;

std::optional<std::string> checkCounts(const std::vector<int>& counts, int logicalWorkers, int processes,
                                       const std::string& what) {
  if (int(counts.size()) != processes)
    return str(what, " ", joinInts(counts), " has ", counts.size(), " entries for ", processes, " processes");
  for (int c : counts) {
    if (c < 1) return str(what, " ", joinInts(counts), ": every process needs at least one logical worker");
  }
  const int sum = std::accumulate(counts.begin(), counts.end(), 0);
  if (sum != logicalWorkers)
    return str(what, " ", joinInts(counts), " sums to ", sum, " but the job has ", logicalWorkers,
               " logical workers");
  return std::nullopt;
}

// When it applies: a step is "passed" if it was when the request arrived; one that waited
// behind others applies at the first boundary it can.
std::optional<std::string> checkWhen(const TakenRequest& t, const JobLayout& job) {
  const int64_t at = t.request.atStep;
  if (job.stepsDone >= job.totalSteps) return std::string("the job has finished");
  if (at > 0 && at < t.arrivedAfter)
    return str("--at-step ", at, " has passed: the job was after step ", t.arrivedAfter, " when the request arrived");
  if (at >= job.totalSteps) return str("--at-step ", at, ": the job ends after step ", job.totalSteps);
  return std::nullopt;
}

const char* kNoCheckpointFolder = "the job has no checkpoint folder (start it with --checkpoint-dir or --output-dir)";

RequestVerdict refuse(std::string why) { return {LayoutCommand(), std::move(why)}; }

RequestVerdict checkRescale(const TakenRequest& t, const JobLayout& job, const ProcessSlots& slots) {
  const control::Request& r = t.request;
  const int n = job.logicalWorkers;
  const int p = int(job.counts.size());
  std::set<int> removed;
  for (int rank : r.removeRanks) {
    if (rank < 0 || rank >= p) return refuse(str("--remove-ranks: the job has ranks 0 to ", p - 1, ", not ", rank));
    if (rank == 0)
      return refuse("--remove-ranks: rank 0 is the job's lead (control channel, logs) and stays; remove other ranks");
    removed.insert(rank);
  }
  const int processes = r.processes > 0 ? r.processes : p - int(removed.size());
  if (processes < 1) return refuse(str("--processes ", processes, ": a job needs at least one process"));
  if (processes > n)
    return refuse(str("--processes ", processes, ": the job has ", n, " logical workers, so at most ", n, " processes"));
  // Without --remove-ranks a shrink gives back the highest ranks.
  if (removed.empty() && processes < p) {
    for (int rank = processes; rank < p; ++rank) removed.insert(rank);
  }
  const int kept = p - int(removed.size());
  if (kept > processes)
    return refuse(str("--processes ", processes, " with --remove-ranks ", joinInts(r.removeRanks), " would keep ",
                      kept, " processes; remove more ranks or ask for more processes"));
  const int joiners = processes - kept;
  int hostSlots = 0;
  for (const auto& h : r.hosts) hostSlots += h.count;
  if (!r.hosts.empty() && hostSlots != joiners)
    return refuse(str("--hosts names ", hostSlots, " new processes but the rescale starts ", joiners));
  if (!r.placement.empty()) {
    if (auto why = checkCounts(r.placement, n, processes, "--placement")) return refuse(*why);
  }
  if (joiners > 0 && !slots.canStartProcesses) return refuse("this job cannot start processes");
  const int inUse = slots.startedWithTheJob + slots.startedByGrows;
  if (joiners > 0 && !slots.oversubscribe && slots.slots > 0 && inUse + joiners > slots.slots)
    return refuse(str("more processes than there are slots: mpirun's allocation has ", slots.slots, " slots and ",
                      inUse, " are in use (", slots.startedWithTheJob, " started with the job, ",
                      slots.startedByGrows, " by grows); give mpirun more slots (--host, --hostfile) or --oversubscribe"));
  for (const auto& h : r.hosts) {
    auto it = t.unreachableHosts.find(h.host);
    if (it != t.unreachableHosts.end())
      return refuse(str("--hosts: host '", h.host, "' cannot be reached: ", it->second));
  }
  RequestVerdict v;
  LayoutCommand& c = v.command;
  c.kind = LayoutCommand::Rescale;
  c.joiners = joiners;
  c.target = r.placement.empty() ? evenCounts(n, processes) : r.placement;
  c.leave.assign(size_t(p + joiners), 0);
  for (int rank : removed) c.leave[size_t(rank)] = 1;
  if (joiners == 0 && removed.empty() && c.target == job.counts)
    return refuse(str("the job already runs on ", p, " processes with placement ", joinInts(c.target)));
  return v;
}

}  // namespace

std::vector<int> evenCounts(int logicalWorkers, int processes) {
  std::vector<int> c(size_t(processes), logicalWorkers / processes);
  for (int r = 0; r < logicalWorkers % processes; ++r) ++c[size_t(r)];
  return c;
}

RequestVerdict checkRequest(const TakenRequest& t, const JobLayout& job, const ProcessSlots& slots) {
  if (auto why = checkWhen(t, job)) return refuse(*why);
  const control::Request& r = t.request;
  RequestVerdict v;
  switch (r.command) {
    case Command::Placement:
      if (auto why = checkCounts(r.placement, job.logicalWorkers, int(job.counts.size()), "placement"))
        return refuse(*why);
      v.command.kind = LayoutCommand::Placement;
      v.command.target = r.placement;
      v.command.leave.assign(job.counts.size(), 0);
      return v;
    case Command::Checkpoint:
      if (!job.checkpointFolder) return refuse(kNoCheckpointFolder);
      v.command.kind = LayoutCommand::Checkpoint;
      return v;
    case Command::Stop:
      if (r.checkpoint && !job.checkpointFolder) return refuse(str("stop --checkpoint: ", kNoCheckpointFolder));
      v.command.kind = LayoutCommand::Stop;
      v.command.checkpoint = r.checkpoint;
      return v;
    case Command::Rescale: return checkRescale(t, job, slots);
    default: return refuse("unknown command");
  }
}

}  // namespace tl::elastic
