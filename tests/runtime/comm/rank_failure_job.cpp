// A small job in which rank 1 fails part-way, in the way named by argv[1]. Run by
// expect_job_fails_fast.cmake, which passes only if the whole job ends with a non-zero status
// within seconds: a failure in one rank must never leave the others hanging.
//
//   sigkill  rank 1 is killed by SIGKILL (as by the OOM killer)
//   exit     rank 1 exits with status 3 without finalising MPI
//   throw    rank 1 throws an exception nobody catches
//   abort    rank 1 calls MpiSession::abortJob(3) (tl's reaction to an error it cannot recover)
//   hang     rank 1 stops taking part without dying; the others' collectives time out and
//            they end the job with abortJob
//   sigstop  rank 1 stops itself (SIGSTOP) as a debugger or a frozen node would; the others'
//            collectives time out under the communicator's own deadline (2 s), and each names
//            rank 1 and its host as the member that did not join
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <ATen/ATen.h>

#include "common/check.h"
#include "runtime/comm/mpi/mpi_communicator.h"

namespace {

void failAs(const std::string& mode) {
  std::fprintf(stderr, "rank 1: failing now (%s)\n", mode.c_str());
  std::fflush(stderr);
  if (mode == "sigkill") std::raise(SIGKILL);
  if (mode == "exit") std::_Exit(3);
  if (mode == "throw") throw std::runtime_error("rank 1 failed on purpose");
  if (mode == "abort") tl::comm::MpiSession::abortJob(3);
  if (mode == "hang")
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (mode == "sigstop") std::raise(SIGSTOP);
  std::fprintf(stderr, "unknown failure mode '%s'\n", mode.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  tl::comm::MpiSession session(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  std::unique_ptr<tl::comm::Communicator> world = tl::comm::createMpiWorldCommunicator();
  // Survivors of a dead rank must be ended by mpirun, not by this timeout; only in "hang" mode
  // is the timeout what ends the job.
  const tl::comm::CollectiveOptions options{mode == "hang" ? std::chrono::seconds(2)
                                                           : std::chrono::seconds(120)};
  // "sigstop" relies on the communicator's deadline, as tl-launch's --collective-timeout does.
  if (mode == "sigstop") world->setTimeout(std::chrono::seconds(2));
  at::Tensor gradient = at::ones({1 << 16}, at::kFloat);
  for (int step = 0; step < 100'000; ++step) {
    if (world->rank() == 1 && step == 20) failAs(mode);
    try {
      if (mode == "sigstop") world->allreduce(gradient, tl::comm::ReduceOp::Max);
      else world->allreduce(gradient, tl::comm::ReduceOp::Max, options);
    } catch (const tl::Error& e) {
      std::fprintf(stderr, "rank %d: %s; ending the job\n", world->rank(), e.what());
      tl::comm::MpiSession::abortJob(4);
    }
  }
  // Reaching this means rank 1 did not fail: the wrapper sees status 0 and fails the test.
  return 0;
}
