// In-place recovery of an NCCL job makes NCCL among the survivors over their MPI communicator
// (elastic/recovery/in_place_nccl.h) and falls back to a restart when that fails. Where NCCL
// cannot run (a build machine without a CUDA device), the failure must come on every survivor
// alike, promptly and clearly, with the member left out (as a lost one is) taking no part, and
// leave the survivors' communicator usable: otherwise one survivor would fall back while the
// others wait in ncclCommInitRank for it.
#include <chrono>
#include <string>

#include <gmock/gmock.h>
#include <ATen/ATen.h>

#include "common/check.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/nccl/nccl_communicator.h"
#include "tests/runtime/comm/mpi_test_world.h"

namespace tl::comm::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST(NcclAmongSurvivors, FailsOnEverySurvivorAlikeWhereNcclCannotRun) {
  if (ncclVisibleDeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present: NCCL can run here";
  const int left = world().size() - 1;  // not in the survivors' communicator, as a lost member
  if (world().rank() != left) {
    std::unique_ptr<Communicator> survivors = createSurvivorsCommunicator(world(), {left});
    ASSERT_EQ(survivors->size(), world().size() - 1);
    const auto start = std::chrono::steady_clock::now();
    try {
      createNcclCommunicator(*survivors, 0);
      ADD_FAILURE() << "made an NCCL communicator without a CUDA device";
    } catch (const tl::Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(ncclAvailable() ? "cannot create an NCCL communicator on rank " +
                                                            std::to_string(survivors->rank())
                                                      : std::string("built without NCCL")));
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "a survivor waited for the others";
    at::Tensor count = at::ones({1}, at::kInt);
    survivors->allreduce(count, ReduceOp::Sum);
    EXPECT_EQ(count.item<int>(), survivors->size()) << "the survivors' communicator broke";
  }
  world().barrier(CollectiveOptions{std::chrono::seconds(60)});
}

}  // namespace
}  // namespace tl::comm::testing
