// tl-sched's decisions, without processes: how a policy's allocation becomes starts, grows and
// shrinks of real tl jobs under the limits of in-place rescale, and the command lines that
// carry them out. Pure functions of the slot table and the jobs' state, so they are unit-tested.
//
// What a real job can do (docs/design/elasticity.md, "In-place rescale: the protocol"): rank 0 never leaves, so a
// running job keeps the kind of its first slot and is never preempted; new processes join
// last and ranks that stay keep their order. A job emulates one kind's speed (every rank gets
// that kind's slowdown), so a job's processes are all of one kind. The policies tl-sched runs
// are yarn-cs and elastic (single-kind) and hetero-goodput built with
// PolicyOptions::inPlaceOnly (it asks only for what real jobs can do). A grow only goes onto
// slots that are free now.
#pragma once

#include <string>
#include <vector>

#include "tools/sched/sim/policy.h"
#include "tools/sched/real/slots.h"

namespace tl::sched {

// How every job is launched and rescaled.
struct RealJobSettings {
  std::string mpirun = "mpirun";
  std::string tlLaunch = "tl-launch";
  std::string tlCtl = "tl-ctl";
  bool allowRunAsRoot = false;
  int batch = 8;                          // tl-launch --batch, per EST
  std::vector<std::string> launchFlags;   // every job's other tl-launch flags (data, device, ...)
};

// Steps of the job: its work in samples over the global batch (batch x ESTs), rounded up.
int64_t stepsOf(const JobSpec& job, int batch);

// `mpirun --oversubscribe -np P tl-launch --model M --logical-workers N --batch B --steps S
//  [--emulate-slowdown F,..] <launchFlags> --output-dir DIR`; a model ending in `.pt` is a
//  TorchScript file: `--model-file M`.
std::vector<std::string> launchArgv(const RealJobSettings& s, const JobSpec& job,
                                    const SlotKind& kind, int processes, const std::string& dir);
// `tl-ctl rescale DIR --processes P` (grow: the new processes start on this machine).
std::vector<std::string> growArgv(const RealJobSettings& s, const std::string& dir, int processes);
// `tl-ctl rescale DIR --remove-ranks R1,R2,..`.
std::vector<std::string> shrinkArgv(const RealJobSettings& s, const std::string& dir,
                                    const std::vector<int>& ranks);

// The policies tl-sched can carry out; InputError naming the policy and why for the others.
void requireRealPolicy(const std::string& policy);
// InputError naming the first job that can never run on the slots (its min_gpus exceed every
// kind, its gang exceeds every kind, or it has fewer ESTs than max_gpus).
void checkRealTrace(const std::vector<JobSpec>& jobs, const SlotTable& slots);

// A job as tl-sched knows it.
struct RealJobState {
  const JobSpec* spec = nullptr;
  std::vector<int> slots;  // by rank: the slot each process holds (empty: not started)
  bool busy = false;       // a start or a rescale is under way: leave it alone
  bool serving = false;    // serves its control channel (can be rescaled)
};

struct RealAction {
  enum Kind { Start, Grow, Shrink } kind = Start;
  size_t job = 0;               // index into the states
  std::vector<int> slots;       // Start, Grow: the slots taken (already owned in the table)
  std::vector<int> removeRanks; // Shrink: the ranks that leave (their slots stay owned until done)
};

// Why a job cannot be given `want` as it stands (empty when it can, leaving aside which slots
// are free now): several kinds; for a running job another kind than rank 0's, no slot at all
// (a preemption) or more than max_gpus.
std::string unrealisable(const Allocation& want, const RealJobState& job, const SlotTable& table);

// The actions that move the jobs towards `want` (one allocation per state, as the policy
// returned it) within what real jobs can do; takes the slots of starts and grows in `table`.
// Shrinks come first in the list; the slots they free are not used before they are given back.
// What cannot be carried out is held to what can (a running job stays on its kind with
// max(1, min)..max of it; a start takes the kind given most); `unrealised`, if given, gets one
// entry per job: unrealisable()'s reason, empty for jobs carried out as asked or left alone.
std::vector<RealAction> realise(const std::vector<Allocation>& want,
                                const std::vector<RealJobState>& jobs, SlotTable& table,
                                std::vector<std::string>* unrealised = nullptr);

// The policy's view of the jobs' current holdings (GPUs per kind).
Allocation heldBy(const RealJobState& job, const SlotTable& table);

}  // namespace tl::sched
