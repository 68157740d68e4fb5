#include "est/placement.h"

#include "common/check.h"

namespace tl::est {

Placement::Placement(std::vector<int> counts) : counts_(std::move(counts)) {
  for (int c : counts_) {
    firsts_.push_back(total_);
    total_ += c;
  }
}

Placement Placement::even(int logicalWorkers, int processes) {
  TL_REQUIRE(logicalWorkers >= 1, "--logical-workers: must be at least 1, got ", logicalWorkers);
  TL_REQUIRE(processes >= 1, "the job needs at least one process");
  TL_REQUIRE(processes <= logicalWorkers, "--logical-workers ", logicalWorkers, " is less than the ",
             processes, " processes: every process needs at least one logical worker");
  std::vector<int> counts(processes, logicalWorkers / processes);
  for (int r = 0; r < logicalWorkers % processes; ++r) ++counts[r];
  return Placement(counts);
}

Placement Placement::explicitCounts(const std::vector<int64_t>& counts, int logicalWorkers,
                                    int processes) {
  std::string given;
  for (auto c : counts) given += (given.empty() ? "" : ",") + std::to_string(c);
  TL_REQUIRE(int(counts.size()) == processes, "--placement ", given, ": has ", counts.size(),
             " entries but the job runs on ", processes, " processes (one entry per process)");
  int64_t sum = 0;
  std::vector<int> out;
  for (size_t i = 0; i < counts.size(); ++i) {
    TL_REQUIRE(counts[i] >= 1, "--placement ", given, ": entry ", i + 1, " is ", counts[i],
               "; every process needs at least one logical worker");
    sum += counts[i];
    out.push_back(int(counts[i]));
  }
  TL_REQUIRE(sum == logicalWorkers, "--placement ", given, ": places ", sum,
             " logical workers but the job has ", logicalWorkers);
  return Placement(out);
}

Placement Placement::withIdleMembers(const std::vector<int>& counts) {
  TL_CHECK(!counts.empty(), "a placement needs at least one process");
  for (int c : counts) TL_CHECK_GE(c, 0, "a process cannot hold a negative number of ESTs");
  Placement p(counts);
  TL_CHECK_GE(p.logicalWorkers(), 1, "a placement needs at least one EST");
  return p;
}

int Placement::owner(int est) const {
  TL_CHECK(est >= 0 && est < total_, "logical worker ", est, " out of range");
  for (int r = 0; r < processes(); ++r) {
    if (est < firsts_[r] + counts_[r]) return r;
  }
  TL_CHECK(false, "unreachable");
  return -1;
}

std::vector<int> Placement::localEsts(int rank) const {
  std::vector<int> out;
  for (int i = 0; i < counts_.at(rank); ++i) out.push_back(firsts_[rank] + i);
  return out;
}

std::string Placement::toString() const {
  std::string s;
  for (int c : counts_) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

}  // namespace tl::est
