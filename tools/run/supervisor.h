// tl-run: runs `mpirun ... tl-launch ...` and, when a rank is lost (killed, crashed, hung), starts
// it again on the processes that remain from the copy of the job the survivors wrote
// (elastic/recovery/recovery_guard.h), keeping N, the global batch and the bits. Torch-free.
// docs/design.md ("Surviving a lost rank").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tl::run {

struct HostSlots {
  std::string host;
  int slots = 1;
};

struct SupervisorOptions {
  int processes = 0;                 // -np of the first launch
  int maxRestarts = 3;               // failures survived; one more ends the job with an error
  double hangTimeoutSeconds = 60;    // a collective waiting this long on a rank: the rank is lost
  double killGraceSeconds = 20;      // mpirun's odls_base_sigkill_timeout: time to write the copies
  std::vector<HostSlots> hosts;      // empty: mpirun's default (this machine)
  std::string mpirun = "mpirun";
  std::vector<std::string> mpirunArgs;  // extra arguments, before -np
  std::string launch;                // tl-launch
  std::vector<std::string> launchArgs;  // the job's flags (--output-dir required)
};

// One candidate copy of the job a survivor wrote: <recovery>/candidates/rank-R{,.json}.
struct Candidate {
  int rank = 0;
  std::string dir;
  nlohmann::json info;
  int64_t step() const { return info.value("step", int64_t(-1)); }
};

// What a failed launch left: the copies, and who was lost.
struct FailureReport {
  std::vector<Candidate> candidates;
  std::vector<int> lostRanks;        // ranks that wrote no copy or are missing in the trusted view
  std::vector<std::string> lostHosts;  // hosts none of whose ranks survived
  std::vector<int> wrote;         // ranks that wrote a copy
  std::vector<int> namedMissing;  // ranks some copy's timed-out collective named (hung, dead, cut off)
  int survivors = 0;
  int accountedFor = 0;  // ranks that wrote a copy or were named missing: all of them once the job is down
};

// Reads <recoveryDir>/candidates; a copy counts only once its info file exists (written after the
// checkpoint's atomic rename). `processes`: the launch's process count.
FailureReport readFailure(const std::string& recoveryDir, int processes);

// The whole supervised run; returns the exit status (0: the job finished).
int supervise(const SupervisorOptions& options);

}  // namespace tl::run
