// main() for gtest binaries that run under mpirun: every rank runs every test.
//
// Rank 0 prints gtest's usual output; the other ranks print only their failures, prefixed by
// their rank, so a failure seen by one rank alone is still visible. The exit status is agreed
// across ranks: non-zero on every rank when any rank failed, so mpirun reports it.
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/runtime/comm/mpi_test_world.h"

namespace tl::comm::testing {

namespace {

MpiSession* gSession = nullptr;
Communicator* gWorld = nullptr;

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() != nullptr ? result.file_name() : "?",
                 result.line_number(), result.message());
  }

  void OnTestEnd(const ::testing::TestInfo& test) override {
    if (test.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, test.test_suite_name(),
                   test.name());
  }

 private:
  int rank_;
};

}  // namespace

MpiSession& session() { return *gSession; }
Communicator& world() { return *gWorld; }

}  // namespace tl::comm::testing

int main(int argc, char** argv) {
  tl::comm::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = session.worldRank();
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new tl::comm::testing::RankFailurePrinter(rank));
  }
  int failed = 0;
  {
    std::unique_ptr<tl::comm::Communicator> world = tl::comm::createMpiWorldCommunicator();
    tl::comm::testing::gSession = &session;
    tl::comm::testing::gWorld = world.get();
    failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    tl::comm::testing::gWorld = nullptr;
  }
  // Plain MPI, not the communicator under test, so a broken communicator cannot hide failures.
  std::vector<int> failedByRank(session.worldSize(), 0);
  MPI_Allgather(&failed, 1, MPI_INT, failedByRank.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::string failedRanks;
  for (int r = 0; r < session.worldSize(); ++r)
    if (failedByRank[r] != 0) failedRanks += (failedRanks.empty() ? "" : ", ") + std::to_string(r);
  if (failedRanks.empty()) return 0;
  if (rank == 0)
    std::fprintf(stderr, "tests failed on rank(s) %s (see the [rank N] lines)\n", failedRanks.c_str());
  return 1;
}
