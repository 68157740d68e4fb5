// Placement: which logical workers (ESTs) each process runs. ESTs are assigned to processes in
// rank order as contiguous ranges: placement 2,1,1 puts ESTs 0-1 on rank 0, 2 on rank 1 and 3
// on rank 2. A running job may also have members with no EST (Placement::withIdleMembers).
#pragma once

#include <string>
#include <vector>

namespace tl::est {

class Placement {
 public:
  // N ESTs spread as evenly as possible over P processes in rank order (the first N mod P
  // processes get one more). InputError when P > N or either is < 1.
  static Placement even(int logicalWorkers, int processes);
  // An explicit placement, checked against N and P: InputError when the sum differs from N,
  // an entry is zero or negative, or the entry count differs from P.
  static Placement explicitCounts(const std::vector<int64_t>& counts, int logicalWorkers, int processes);
  // A layout inside a running job (EstExecutor::changeLayout): entries may be zero, for a member
  // that holds no EST but still takes part in the step's collectives. At least one EST in all.
  static Placement withIdleMembers(const std::vector<int>& counts);

  int processes() const { return int(counts_.size()); }
  int logicalWorkers() const { return total_; }
  int count(int rank) const { return counts_.at(rank); }
  int first(int rank) const { return firsts_.at(rank); }  // first logical rank on `rank`
  // The process that runs logical worker `est`.
  int owner(int est) const;
  std::vector<int> localEsts(int rank) const;
  std::string toString() const;  // "2,1,1"

 private:
  explicit Placement(std::vector<int> counts);
  std::vector<int> counts_;
  std::vector<int> firsts_;
  int total_ = 0;
};

}  // namespace tl::est
