// MPI backend. Light header: no <mpi.h> here, so callers need not see MPI.
//
// Threading: MPI runs with MPI_THREAD_MULTIPLE (a lead starts processes on a helper thread,
// mpi_spawn.h), but every collective of every MPI communicator must come from the thread that
// created the MpiSession; collectives check this and throw tl::Error otherwise.
//
// Timeouts: collectives are nonblocking MPI operations waited for under the options' deadline.
// On expiry the call throws tl::TimeoutError and the communicator is failed for good (sticky).
// The abandoned MPI operation may still complete later and write into the tensor it was given;
// tl keeps that tensor's memory alive until MPI is finalised. The expected reaction to a timeout
// is to end the job (MpiSession::abortJob).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "runtime/comm/communicator.h"

namespace tl::comm {

// Initialises MPI (MPI_THREAD_MULTIPLE; communicators on the thread that created it) and
// finalises it when destroyed. One per process.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int worldRank() const;
  int worldSize() const;
  // Ends every process of the job now, with `code` (for failures that only some ranks see).
  // Callable from any thread and without a session (then it ends this process alone).
  [[noreturn]] static void abortJob(int code);

 private:
  int worldRank_ = 0;
  int worldSize_ = 1;
};

// How the ring moves int64 sums whose collective allows a compact encoding
// (CollectiveOptions::compactIntegers).
enum class RingEncoding {
  Auto,     // compact where the communicator spans hosts (its members' processor names differ)
  Compact,  // always
  Plain,    // never: int64 as it is
};

struct MpiCommunicatorOptions {
  // Largest count handed to one MPI call (MPI counts are int); larger tensors travel in
  // several calls. Tests lower it to exercise that path without gigabytes of data.
  std::int64_t maxCountPerCall = std::numeric_limits<int>::max();
  // Sums at least this large whose result does not depend on the order of the additions
  // (integers; floats over two members) go around a ring of point-to-point messages in chunks
  // of ringChunkBytes instead of through MPI_Iallreduce (mpi_ring_allreduce.h says why).
  // Benchmarks raise ringMinBytes to compare with MPI_Iallreduce; tests lower it.
  std::int64_t ringMinBytes = std::int64_t(64) << 10;
  std::int64_t ringChunkBytes = std::int64_t(1) << 20;
  // Auto finds out whether the members span hosts with one small allreduce, at the first
  // collective that allows compaction. The environment variable TL_RING_ENCODING=auto|compact|
  // plain, read when the communicator is made, overrides Auto (benchmarks compare encodings
  // with one build); another value is an error.
  RingEncoding ringEncoding = RingEncoding::Auto;
};

// A communicator over MPI_COMM_WORLD (duplicated, so tl's traffic is separate). Collective over
// the world; needs a live MpiSession. Communicators split from it inherit `options`.
std::unique_ptr<Communicator> createMpiWorldCommunicator(const MpiCommunicatorOptions& options = {});

// In-place recovery: a communicator of the members of `comm` not in `lostRanks` (ranks of
// `comm`), in their order, with `comm`'s timeout. Collective over the survivors only
// (MPI_Comm_create_group), so a lost member cannot hold it up; blocking (MPI has no
// nonblocking form): a survivor lost during it hangs it, which the caller must guard against.
// Works on a communicator whose collectives were abandoned (abandonCollectives).
std::unique_ptr<Communicator> createSurvivorsCommunicator(Communicator& comm, const std::vector<int>& lostRanks);

}  // namespace tl::comm
