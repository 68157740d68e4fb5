// A communicator's failure, kept for good: the NCCL backend's rules for giving a communicator up,
// written without CUDA so that they are tested where no device is (test_comm_local).
//
// - The first failure is kept and rethrown by every later call (check).
// - Collectives abandoned (abandonCollectives: members of the job were lost) after this was made
//   are a failure too: check then fails with comm::MembersLost, which the running collective's
//   next poll and every later call see. Made afterwards, it is not affected.
// - `release` runs once, at the first failure, on the failing thread: the NCCL backend aborts its
//   communicator there (ncclCommAbort), which stops kernels waiting for a lost peer and leaves
//   nothing for its destructor to destroy (ncclCommDestroy would need every member).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>

namespace tl::comm::detail {

class StickyFailure {
 public:
  StickyFailure(std::string backend, std::function<void()> release);

  // Throws the kept failure. Else, when collectives were abandoned since this was made, fails
  // with MembersLost ("<backend> <operation> on rank R of S: abandoned, ...") and throws it.
  // `operation` is asked only then.
  void check(const std::function<std::string()>& operation, int rank, int size);
  void check(const char* operation, int rank, int size);
  // Keeps `error` unless a failure is kept already; the first one releases.
  void fail(std::exception_ptr error);

  bool failed() const { return failure_ != nullptr; }
  // abandonCollectives was called after this was made (failed or not yet).
  bool abandoned() const;

 private:
  std::string backend_;
  std::function<void()> release_;
  std::uint64_t epoch_;  // collectivesEpoch() when made
  std::exception_ptr failure_;
};

}  // namespace tl::comm::detail
