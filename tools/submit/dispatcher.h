// Runs the jobs of a table through mpirun, one after another or all at once (--background),
// and records when each started and ended and how it exited.
//
// Threading: one thread. The dispatcher polls its children (every ~20 ms) between
// submissions, so end times are accurate to that and a Ctrl-C is acted on within it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tools/submit/job_table.h"
#include "tools/submit/mpirun_command.h"

namespace tl::submit {

struct JobOutcome {
  bool started = false;
  std::chrono::system_clock::time_point start, end;  // wall clock, for the report
  double startSeconds = 0, endSeconds = 0;           // since the dispatcher began
  int exitCode = -1;                                 // 128 + signal when a signal ended it
  int signal = 0;
  std::string note;         // why it did not start, or why it has no numbers
  bool hasNumbers = false;  // read from summary.json (exit 0 only)
  double imagesPerSecond = 0, finalLoss = 0;

  double completionSeconds() const { return endSeconds - startSeconds; }
  std::string status() const;  // "0", "1", "signal 9", "not started", ...
};

struct DispatchOptions {
  bool background = false;  // start each job without waiting for the previous one to end
  MpirunOptions mpirun;
  bool dryRun = false;  // print the commands, run nothing
  // Returns how many interrupts (Ctrl-C) have arrived so far; each new one is forwarded to
  // the running jobs, and no job starts after the first.
  std::function<int()> interrupts = [] { return 0; };
  std::function<void(const std::string&)> log;  // progress lines (default: stdout)
};

// Runs the jobs; returns one outcome per job, in table order.
//
// When a job may start: sequentially, once the previous job has ended and at least its
// submit_interval after the previous submission; with `background`, submit_interval after
// the previous submission (the first job: after the dispatcher began).
std::vector<JobOutcome> runJobs(const std::vector<SubmitJob>& jobs, const DispatchOptions& options);

// Reads images/s and final loss from <folder>/summary.json into `outcome`.
void readSummaryNumbers(const std::string& folder, JobOutcome& outcome);

// SIGINT/SIGTERM handling for the tool's main: counts the signals; nothing else.
void installInterruptCounter();
int interruptsReceived();

}  // namespace tl::submit
