// MpiSession: MPI's lifetime and the thread that owns it.
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/mpi/mpi_detail.h"

namespace tl::comm {

namespace {

// Process-wide because MPI is: one session, one owning thread.
std::atomic<bool> gSessionAlive{false};
std::thread::id gOwnerThread;

std::mutex gAbandonedMutex;
std::vector<at::Tensor>& abandonedBuffers() {
  static auto* buffers = new std::vector<at::Tensor>();  // never destroyed: see ~MpiSession
  return *buffers;
}

}  // namespace

namespace detail {

bool waitUntilRead(int fd, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int unread = 0;
  while (::ioctl(fd, FIONREAD, &unread) == 0 && unread > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void throwMpiError(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) std::snprintf(text, sizeof text, "?");
  throw Error(str(file, ":", line, ": ", call, " failed with MPI error ", code, ": ", text));
}

void checkOnMpiThread(const char* operation) {
  TL_CHECK(gSessionAlive.load(), operation,
           " needs MPI, but no tl::comm::MpiSession is alive in this process");
  TL_CHECK(std::this_thread::get_id() == gOwnerThread, operation,
           " was called from a thread other than the one that created the MpiSession; MPI runs "
           "and tl's communicators are used from that thread only");
}

void keepAliveUntilFinalize(std::vector<at::Tensor> buffers) {
  std::lock_guard<std::mutex> lock(gAbandonedMutex);
  for (at::Tensor& buffer : buffers) abandonedBuffers().push_back(std::move(buffer));
}

}  // namespace detail

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  TL_MPI_CHECK(MPI_Initialized(&initialized));
  TL_CHECK(!initialized && !gSessionAlive.load(),
           "MPI is already initialised: create one tl::comm::MpiSession per process, before any "
           "other use of MPI");
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
  // Open MPI 5 does not know on which host a process started by MPI_Comm_spawn runs ("host:
  // unknown"), so parent and child never use the shared-memory BTL and talk over TCP even on
  // one host; there the default "netlink" reachability finds that the route from a host's own
  // address to itself leaves through lo, not through the interface that holds it (eth0), calls
  // every pair of interfaces unreachable ("Unable to find reachable pairing between local and
  // remote interfaces") and the first MPI_Send to the spawned process fails with
  // MPI_ERR_INTERN. The "weighted" component pairs interfaces by their networks (same host or
  // not) and has both work. Set for parent and child alike, since both sides pair interfaces;
  // whoever sets OMPI_MCA_reachable keeps their choice. Open MPI 4 is left as it was.
  setenv("OMPI_MCA_reachable", "weighted", /*overwrite=*/0);
  // Open MPI 5 selects the hierarchical "han" collectives by default (4.1 did not). On the
  // communicator a grow merges with a spawned process, han is chosen on some ranks and not on
  // others (the spawned process's locality is unknown to some of them), so the first collective
  // there (the roll call's MPI_Allgather) runs two different algorithms and never ends. Without
  // han every rank uses "tuned", as on Open MPI 4.1. A user's own OMPI_MCA_coll is kept.
  setenv("OMPI_MCA_coll", "^han", /*overwrite=*/0);
#endif
  int provided = MPI_THREAD_SINGLE;
  // MPI_THREAD_MULTIPLE so that a job's lead can start processes (MPI_Comm_spawn) on a helper
  // thread while it trains; communicators themselves stay on this thread.
  TL_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    TL_CHECK(false, "this MPI library does not provide MPI_THREAD_MULTIPLE (provided level ",
             provided, "), which growing a job in place needs");
  }
  TL_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &worldRank_));
  TL_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &worldSize_));
  gOwnerThread = std::this_thread::get_id();
  gSessionAlive.store(true);
}

MpiSession::~MpiSession() {
  gSessionAlive.store(false);
  MPI_Finalize();
  // Only now can no abandoned operation write into these any more.
  std::lock_guard<std::mutex> lock(gAbandonedMutex);
  abandonedBuffers().clear();
}

int MpiSession::worldRank() const { return worldRank_; }
int MpiSession::worldSize() const { return worldSize_; }

void MpiSession::abortJob(int code) {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  std::fflush(stdout);
  std::fflush(stderr);
  // mpirun prints its MPI_ABORT banner from a message of its own, which can overtake this
  // process's last output on its way through the I/O forwarding: let that output be read first,
  // and forwarded, so the user sees the reason before the banner.
  detail::waitUntilRead(STDOUT_FILENO, std::chrono::seconds(2));
  detail::waitUntilRead(STDERR_FILENO, std::chrono::seconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  // MPI_Abort should not return; if it does, or MPI is not running, end this process at least.
  std::_Exit(code);
}

}  // namespace tl::comm
