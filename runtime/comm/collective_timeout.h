// The TimeoutError of a collective whose backend knows who did not join it: the ranks travel as
// data, so that nobody parses them back out of the message (tl-launch's recovery guard writes
// them into its copy of the job for tl-run; elastic/recovery/recovery_files.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/check.h"

namespace tl::comm {

class CollectiveTimeout : public TimeoutError {
 public:
  CollectiveTimeout(const std::string& what, std::vector<int> absentRanks)
      : TimeoutError(what), absentRanks_(std::move(absentRanks)) {}
  // Ranks of the communicator that had not entered the collective when it timed out (empty:
  // every member joined, yet it did not complete).
  const std::vector<int>& absentRanks() const { return absentRanks_; }

 private:
  std::vector<int> absentRanks_;
};

// A collective given up because members of the job were lost (abandonCollectives): not a
// timeout. Survivors that recover in place catch it at the step loop and go on over a
// communicator of the survivors (elastic/recovery/in_place.h).
class MembersLost : public Error {
 public:
  using Error::Error;
};

// Any thread (a watcher that saw a member die): every collective of a communicator made before
// this call, running or not yet started, throws MembersLost from now on, and its pending MPI
// requests are dropped (kept alive, never waited for). Communicators made afterwards are not
// affected. Lock-free.
void abandonCollectives();
// How many times abandonCollectives was called: a communicator made at epoch e is abandoned
// once the epoch passes e.
std::uint64_t collectivesEpoch();

}  // namespace tl::comm
