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
