// The recovery files: the one contract between the recovery guard in tl-launch (writes the
// candidates, reads the history) and tl-run's supervisor (reads the candidates, writes the
// history). Writer and reader of each file live here together; neither program spells a path
// or a key of its own. Torch-free. docs/design/recovery.md.
//
// <recovery>/ is the folder tl-run gives tl-launch (--recovery-dir; <output>/recovery):
//
//   candidates/rank-R/checkpoint.tl  rank R's copy of the whole job at the last step boundary it
//                                    completed (elastic/checkpoint/job_checkpoint.h), written atomically
//   candidates/rank-R.json           written after it: the copy is complete once this exists.
//     {"rank": R, "host": "h", "pid": 123,
//      "step": 7,                 the boundary the copy holds (-1 when a reader finds none)
//      "completed_step": 8,       the last step whose update this process finished
//      "reason": "...",           why it wrote (mpirun's signal, a timeout's message, its failure)
//      "timed_out": true,         the reason is a collective that timed out (absent: false;
//                                 older copies say so only by "timed out" in the reason)
//      "missing_ranks": [3],      ranks the timed-out collective named as not joining
//      "members": [{"rank": 0, "host": "h", "pid": 123}, ...],  the job when the copy was taken
//      "snapshot_at": s, "detected_at": s, "written_at": s}     Unix seconds
//   history.json                     tl-run -> the next launch: the failures so far, the last one
//                                    not yet reported in the job's metrics.
//     {"failures": [{"lost_ranks": [3], "lost_hosts": ["b"], "detected_by": "mpirun" | "hang-timeout",
//                    "reason": "...", "boundary_step": 7, "steps_recomputed": 1, "failed_at": s,
//                    "detection_s": s, "processes_before": 4, "processes_after": 3, "copies": 3,
//                    "relaunched_at": s, "mode": "restart"}, ...]}
//     (in-place recoveries keep the same record in memory, with "mode": "in-place",
//      "agreement_s" and "resumed_at", and report it in the job's metrics only)
//     (a launch lost before its first step has no lost_hosts, failed_at, detection_s, copies)
//   state-L/                         the newest copy of lost launch L, kept by tl-run (--resume)
//
// Readers take every key as optional with the defaults above, so copies and histories written
// by earlier versions still read; a damaged candidate info is not a complete copy (skipped), a
// damaged history is an InputError naming the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tl::elastic {

// tl-run -> tl-launch through the environment (mpirun -x): kInPlaceEnv=1 arms in-place
// recovery (elastic/recovery/in_place.h); with it, kExitFileEnv names a file a process that
// ends with a non-zero status appends "<status>\n" to, since mpirun --enable-recovery exits 0
// whatever its processes' statuses.
inline constexpr const char* kInPlaceEnv = "TL_RECOVERY_IN_PLACE";
inline constexpr const char* kExitFileEnv = "TL_RECOVERY_EXIT_FILE";

struct RecoveryPaths {
  std::string dir;
  std::string candidates() const { return dir + "/candidates"; }
  std::string candidateDir(int rank) const { return candidates() + "/rank-" + std::to_string(rank); }
  std::string candidateCheckpoint(int rank) const { return candidateDir(rank) + "/checkpoint.tl"; }
  std::string candidateInfo(int rank) const { return candidateDir(rank) + ".json"; }
  std::string history() const { return dir + "/history.json"; }
  std::string keptState(int launch) const { return dir + "/state-" + std::to_string(launch); }
  std::string exitStatuses() const { return dir + "/exit-statuses"; }
  // Copies left by processes whose host found itself cut off from the job (held/candidates/):
  // tl-run restarts from them only when the other side ended too without a copy.
  RecoveryPaths held() const { return {dir + "/held"}; }
};

struct Member {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  bool operator==(const Member& o) const { return rank == o.rank && host == o.host && pid == o.pid; }
};

// What rank-R.json says of the copy next to it.
struct CandidateInfo {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  int64_t step = -1;
  int64_t completedStep = 0;
  std::string reason;
  bool timedOut = false;
  std::vector<int> missingRanks;
  std::vector<Member> members;
  double snapshotAt = 0;
  double detectedAt = 0;
  double writtenAt = 0;
};

nlohmann::json toJson(const CandidateInfo& info);
// Throws nlohmann::json::exception when "rank" is missing or a key has the wrong type.
CandidateInfo candidateInfoFromJson(const nlohmann::json& j);
// The info file of a copy whose checkpoint is already in place (atomically).
void writeCandidateInfo(const RecoveryPaths& paths, const CandidateInfo& info);

// One failure tl-run saw, as history.json and the job's `failure` metrics records carry it.
struct FailureRecord {
  std::vector<int> lostRanks;
  std::optional<std::vector<std::string>> lostHosts;  // absent: lost before its first step
  std::string detectedBy;  // "mpirun" or "hang-timeout"
  std::string reason;
  int64_t boundaryStep = 0;  // the step the next launch resumes from
  int64_t stepsRecomputed = 0;
  int processesBefore = 0;
  std::optional<int> processesAfter;  // absent when the job is not relaunched
  std::optional<double> failedAt;     // when the last boundary before the loss was taken
  std::optional<double> detectionSeconds;
  std::optional<size_t> copies;
  std::optional<double> relaunchedAt;
  // "restart" (tl-run started the job again from a copy) or "in-place" (the survivors went on
  // in their processes; such a failure is never in history.json, only in the job's records).
  std::string mode = "restart";
  std::optional<double> agreementSeconds;  // in place: the survivors' communicator and boundary
  std::optional<double> resumedAt;         // in place: when the survivors went on (Unix seconds)
};

nlohmann::json toJson(const FailureRecord& f);
FailureRecord failureFromJson(const nlohmann::json& j);

struct RecoveryHistory {
  std::vector<FailureRecord> failures;
};

nlohmann::json toJson(const RecoveryHistory& h);
void writeHistory(const RecoveryPaths& paths, const RecoveryHistory& h);
// Empty when there is no history.json; InputError naming the file when it is damaged.
RecoveryHistory readHistory(const RecoveryPaths& paths);

// One complete copy of the job a survivor wrote.
struct Candidate {
  std::string dir;  // candidates/rank-R
  CandidateInfo info;
  int rank() const { return info.rank; }
  int64_t step() const { return info.step; }
};

// What a lost launch left: the copies, and who was lost.
struct FailureReport {
  std::vector<Candidate> candidates;   // newest step first, then lowest rank
  std::vector<int> lostRanks;          // ranks that wrote no copy or are missing in the trusted view
  std::vector<std::string> lostHosts;  // hosts none of whose ranks survived
  std::vector<int> wrote;              // ranks that wrote a copy
  std::vector<int> namedMissing;       // ranks some copy's timed-out collective named (hung, dead, cut off)
  int survivors = 0;
  int processes = 0;     // the job's processes when it was lost, as the copies tell it
  int accountedFor = 0;  // ranks that wrote a copy or were named missing: all of them once the job is down
  // The job as the copies name it (from the first copy that lists its members).
  std::vector<Member> members() const;
};

// Reads candidates/; a copy counts only once its info file exists. `processes`: the launch's
// process count, used unless the copies tell otherwise (the member table of the newest copy
// follows in-place rescales; older copies may only name ranks beyond it).
FailureReport readFailure(const RecoveryPaths& paths, int processes);

}  // namespace tl::elastic
