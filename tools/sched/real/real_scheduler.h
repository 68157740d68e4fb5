// tl-sched's run: a policy driving real tl jobs on process slots. Jobs start with
// `mpirun tl-launch` at or after their arrival, grow and shrink in place through `tl-ctl`
// (authenticated with the job's control.key), and are recorded as tl-sim records its jobs, so
// the two can be compared job by job.
//
// Threading: one thread. Every child (mpirun, tl-ctl) runs in its own process group and is
// polled; a decision is made on every event (arrival, job end, rescale answered, a job starting
// to serve control) and every tick. A job with a start or a rescale under way is left alone
// until it is answered, so each job has at most one command in flight.
#pragma once

#include <string>
#include <vector>

#include "tools/sched/real/real_plan.h"
#include "tools/sched/sim/simulator.h"

namespace tl::sched {

struct RealRunOptions {
  RealJobSettings job;
  std::string outDir;            // jobs/<id>/ (tl-launch's output), logs/, events.csv
  double tickSeconds = 1;        // a decision at least this often
  double timeLimitSeconds = 0;   // > 0: stop every job and fail after this long
};

struct RealJobRecord {
  std::string id;
  std::string kind;           // the slot kind it ran on
  std::string status;         // done, failed (mpirun's exit status was not 0), or not run
  int exitCode = 0;
  int processes = 0;          // at the end
  int rescales = 0;           // in-place rescales tl-ctl confirmed
  int failedRescales = 0;     // tl-ctl answered with an error (the job went on as it was)
  std::vector<double> pauses; // seconds each in-place rescale paused the job (its metrics)
  std::string paramsSha256;   // from its summary.json
  std::string dir;            // tl-launch's output folder
};

struct RealRunResult {
  SimResult run;  // per job arrival/start/finish/GPU-seconds/rescales, timeline, summary
  std::vector<RealJobRecord> records;
  bool allDone() const;
};

// Runs the trace (sorted by arrival) to the end. InputError for a policy tl-sched cannot carry
// out or a job that can never run; a job that fails is recorded as failed and the rest go on.
// hetero-goodput is meant to be built with PolicyOptions::inPlaceOnly (tl-sched does); built
// without, its moves, mixed kinds and preemptions are held back and recorded as unrealisable.
RealRunResult runReal(const std::vector<JobSpec>& trace, SlotTable& slots, Policy& policy,
                      const RealRunOptions& options);

// The per-job CSV with tl-sched's own columns.
std::string realJobsCsv(const RealRunResult& result);

}  // namespace tl::sched
