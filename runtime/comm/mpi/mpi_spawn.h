// Growing a running MPI job: the job's lead starts a process as its own one-process MPI job
// (MPI_Comm_spawn over MPI_COMM_SELF, so the lead may do it on a helper thread while the job
// trains, and each started process can later leave and finalize on its own), exchanges a few
// messages with it while it gets ready, and at a step boundary the job's members and the new
// process form one communicator in which the members keep their ranks and the new process
// comes last. Light header: no <mpi.h>.
//
// Open MPI 4.1 facts this relies on (measured on the team's machines): spawning one process
// takes ~0.25 s and does not stop the caller's other threads; MPI_Comm_disconnect of a
// communicator merged from an intercommunicator hangs, while MPI_Comm_free of every
// communicator that reaches the spawned process lets it finalize alone and its peers go on.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/communicator.h"

namespace tl::comm {

// The lead's end of a started process. Thread use: start() on any thread; the rest on the
// thread that uses the job's communicators (or with that thread not in MPI, guarded by the
// caller).
class SpawnedProcess {
 public:
  // Starts `program` with `args` as a new MPI job of one process; on `host` when not empty
  // (MPI's "host" info key), else where MPI places it. Blocks until the process has initialised
  // MPI. tl::Error with MPI's reason when it cannot be started (no such host, no free slot, no
  // such program).
  static std::unique_ptr<SpawnedProcess> start(const std::string& program,
                                               const std::vector<std::string>& args,
                                               const std::string& host);
  ~SpawnedProcess();
  SpawnedProcess(const SpawnedProcess&) = delete;
  SpawnedProcess& operator=(const SpawnedProcess&) = delete;

  void send(const std::string& message);
  // The process's next message, if one has arrived (non-blocking).
  std::optional<std::string> poll();
  std::string receive();  // blocking

  struct Handle;  // the intercommunicator (mpi_spawn.cpp)
  Handle& handle() { return *handle_; }

 private:
  explicit SpawnedProcess(std::unique_ptr<Handle> handle);
  std::unique_ptr<Handle> handle_;
};

// A started process's end of the link to the lead that started it.
class ParentLink {
 public:
  // The link when this process was started by SpawnedProcess::start, else nullptr.
  static std::unique_ptr<ParentLink> ofThisProcess();
  ~ParentLink();
  ParentLink(const ParentLink&) = delete;
  ParentLink& operator=(const ParentLink&) = delete;

  void send(const std::string& message);
  std::string receive();  // blocking

  struct Handle;
  Handle& handle() { return *handle_; }

 private:
  explicit ParentLink(std::unique_ptr<Handle> handle);
  std::unique_ptr<Handle> handle_;
};

// Collective over `members` plus the started process (which calls joinLead): a communicator
// with every member at its old rank and the process at rank members.size(). `process` is the
// started process on members' rank 0 and nullptr elsewhere. Blocking MPI calls, no deadline:
// call only when the process said it is waiting to join.
std::unique_ptr<Communicator> admitProcess(Communicator& members, SpawnedProcess* process);
// The started process's side of admitProcess.
std::unique_ptr<Communicator> joinLead(ParentLink& lead);

// Whether mpirun lets this job run more processes than it has slots (--oversubscribe), so that a
// grow past the slots may start. Open MPI 4 tells its processes in the environment
// (OMPI_MCA_rmaps_base_oversubscribe); Open MPI 5's PRRTE ignores that variable and says so only
// in PMIx's mapping policy (":OVERSUBSCRIBE" from --oversubscribe, --map-by :OVERSUBSCRIBE or
// PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe), which spawned jobs inherit. Without
// PMIx on Open MPI 5: true (nothing is refused early; PRRTE itself refuses a spawn past the
// slots with an error, where Open MPI 4.1's mpirun hung). After MPI is initialised.
bool jobMayOversubscribe();

}  // namespace tl::comm
