// The TimeoutError of a collective whose backend knows who did not join it: the ranks travel as
// data, so that nobody parses them back out of the message (tl-launch's recovery guard writes
// them into its copy of the job for tl-run; elastic/recovery/recovery_files.h).
#pragma once

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

}  // namespace tl::comm
