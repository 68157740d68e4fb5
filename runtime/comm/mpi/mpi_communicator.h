// MPI backend. Light header: no <mpi.h> here, so callers need not see MPI.
#pragma once

#include <memory>

#include "runtime/comm/communicator.h"

namespace tl::comm {

// Initialises MPI (MPI_THREAD_FUNNELED: all MPI calls from the thread that created it) and
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
  [[noreturn]] static void abortJob(int code);
};

// A communicator over MPI_COMM_WORLD (duplicated, so tl's traffic is separate).
std::unique_ptr<Communicator> createMpiWorldCommunicator();

}  // namespace tl::comm
