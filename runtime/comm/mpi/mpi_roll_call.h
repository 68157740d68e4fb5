// Who did not join a collective that timed out, for the MPI backend's messages.
//
// Each member counts the collectives it has entered on a communicator. When one times out, the
// waiting member asks every other member for its count (a "roll call") over a duplicate of the
// communicator, so the question never mixes with collective traffic. Members answer while they
// wait in any collective of that communicator, or in a roll call of their own; one that does not
// answer within a grace period, or answers with a smaller count, did not join. A stopped
// (SIGSTOP), busy or dead member is thus named without its help. Nothing is sent while
// collectives complete: the cost on the normal path is an MPI_Test of one posted receive every
// few polls of a waiting collective.
//
// Threading: the MpiSession's thread only, as every MPI call of the backend.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace tl::comm::detail {

class MpiRollCall {
 public:
  // Collective over `comm` (blocking): duplicates it and gathers every member's host name and
  // world rank, for messages.
  explicit MpiRollCall(MPI_Comm comm);
  ~MpiRollCall();
  MpiRollCall(const MpiRollCall&) = delete;
  MpiRollCall& operator=(const MpiRollCall&) = delete;

  // Called at the start of every collective of the communicator.
  void enter() { ++entered_; }
  // Answers the roll calls other members have asked so far; cheap when there are none.
  void answer();
  // After the current collective (the entered-th) timed out: the members that have not entered
  // it, waiting at most `grace` for their answers.
  std::vector<int> absentees(std::chrono::milliseconds grace);
  // "rank 1 (host node7) did not join it within 2 s", for the members `absent`.
  std::string describeAbsentees(const std::vector<int>& absent, std::chrono::milliseconds timeout) const;

 private:
  MPI_Comm watch_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  std::vector<std::string> hosts_;
  std::vector<int> worldRanks_;
  std::int64_t entered_ = 0;
  std::int64_t question_ = 0;  // receive buffer of the posted ask
  MPI_Request ask_ = MPI_REQUEST_NULL;
  std::deque<std::int64_t> sent_;  // buffers of sends that may still be in flight (stable addresses)
  std::vector<MPI_Request> sends_;
};

}  // namespace tl::comm::detail
