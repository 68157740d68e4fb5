// EstExecutor layouts on real processes (mpirun -np 4): every placement of the 4 ESTs over the
// 4 members (idle members included), and layout changes between steps, give DDP mode's bits.
#include <gtest/gtest.h>

#include "dataload/synthetic.h"
#include "tests/est/layout_runs.h"
#include "tests/runtime/comm/mpi_test_world.h"
#include "tests/support/run_command.h"

namespace tl::est {
namespace {

using testing::Change;

const std::string& dataDir() {
  static const std::string dir = [] {
    const std::string d =
        testing::syntheticCifar("executor_layout_mpi_data", 96, 3, comm::testing::world().rank() == 0);
    comm::testing::world().barrier();
    return d;
  }();
  return dir;
}

testing::RankOutcome run(const std::vector<int>& counts, const std::vector<Change>& changes = {}) {
  return testing::trainOnRank(comm::testing::world(), testing::layoutTestJob(dataDir(), "exact"), counts, changes);
}

const std::string& ddp() {
  static const std::string sha = run({1, 1, 1, 1}).sha;
  return sha;
}

TEST(ExecutorLayoutMpi, PlacementsMatchDdpMode) {
  ASSERT_EQ(comm::testing::world().size(), 4);
  ASSERT_EQ(ddp().size(), 64u);
  for (const auto& counts : std::vector<std::vector<int>>{{4, 0, 0, 0}, {2, 2, 0, 0}, {3, 1, 0, 0}, {2, 1, 1, 0}}) {
    const auto o = run(counts);
    EXPECT_EQ(o.sha, ddp());
  }
}

TEST(ExecutorLayoutMpi, LayoutChainMatchesDdpMode) {
  const auto o = run({1, 1, 1, 1}, {{1, {2, 2, 0, 0}}, {2, {1, 2, 1, 0}}, {3, {4, 0, 0, 0}}, {4, {1, 1, 1, 1}}});
  EXPECT_EQ(o.sha, ddp());
  EXPECT_EQ(o.steps, testing::kLayoutTestSteps);
}

TEST(ExecutorLayoutMpi, ShrinkLetsMembersLeave) {
  const int rank = comm::testing::world().rank();
  const auto o = run({1, 1, 1, 1}, {{2, {2, 2, 0, 0}, Change::FreshSplit}, {4, {3, 1}}});
  EXPECT_EQ(o.inJob, rank < 2);
  EXPECT_EQ(o.steps, rank < 2 ? testing::kLayoutTestSteps : 2);
  if (rank < 2) {
    EXPECT_EQ(o.sha, ddp());
  }
  comm::testing::world().barrier();
}

}  // namespace
}  // namespace tl::est
