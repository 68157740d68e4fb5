// Single-process tests of runtime/comm: waiting, and the NCCL factory where NCCL cannot run.
#include <unistd.h>

#include <ctime>
#include <functional>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ATen/ATen.h>

#include "common/check.h"
#include "runtime/comm/collective_wait.h"
#include "runtime/comm/mpi/mpi_detail.h"
#include "runtime/comm/nccl/nccl_communicator.h"

namespace tl::comm {
namespace {

using detail::Clock;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST(PollUntil, ReturnsAsSoonAsDone) {
  int calls = 0;
  EXPECT_TRUE(detail::pollUntil([&] { return ++calls == 3; }, Clock::now() + 10s));
  EXPECT_EQ(calls, 3);
}

TEST(PollUntil, AsksAtLeastOnceEvenPastTheDeadline) {
  int calls = 0;
  EXPECT_TRUE(detail::pollUntil([&] { return ++calls > 0; }, Clock::now() - 1s));
  EXPECT_EQ(calls, 1);
}

// The point of the backoff: a rank waiting for late peers must leave the cores to them.
TEST(PollUntil, GivesUpAtTheDeadlineWithoutBurningACore) {
  const auto start = Clock::now();
  const std::clock_t cpuStart = std::clock();
  EXPECT_FALSE(detail::pollUntil([] { return false; }, start + 400ms));
  const double cpuSeconds = static_cast<double>(std::clock() - cpuStart) / CLOCKS_PER_SEC;
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, 400ms);
  EXPECT_LT(waited, 1500ms);  // generous: a loaded CI machine oversleeps
  // A spinning wait would use the whole 0.4 s; a loaded machine adds some overhead to a sleeping one.
  EXPECT_LT(cpuSeconds, 0.2) << "polling used " << cpuSeconds << " s of CPU in 0.4 s";
}

TEST(DeadlineAfter, SaturatesHugeTimeoutsAndRefusesNegativeOnes) {
  EXPECT_EQ(detail::deadlineAfter(std::chrono::milliseconds::max()), Clock::time_point::max());
  EXPECT_GT(detail::deadlineAfter(10min), Clock::now() + 9min);
  EXPECT_THROW(detail::deadlineAfter(-1ms), tl::Error);
}

TEST(TimeoutMessage, NamesOperationRankSizeAndTimeout) {
  const std::string message = detail::timeoutMessage("mpi", "barrier", 2, 3, 1500ms);
  EXPECT_THAT(message, HasSubstr("mpi barrier"));
  EXPECT_THAT(message, HasSubstr("1500 ms"));
  EXPECT_THAT(message, HasSubstr("rank 2"));
  EXPECT_THAT(message, HasSubstr("size 3"));
}

// Before MPI_Abort, a rank waits until mpirun has read its last output (a pipe), so that the
// reason comes out before the abort banner.
TEST(WaitUntilRead, ReturnsOnceThePipeIsReadAndGivesUpAtTheLimit) {
  int ends[2];
  ASSERT_EQ(pipe(ends), 0);
  const std::string text(100, 'x');
  ASSERT_EQ(write(ends[1], text.data(), text.size()), ssize_t(text.size()));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(detail::waitUntilRead(ends[1], std::chrono::milliseconds(50)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    char buffer[100];
    EXPECT_EQ(read(ends[0], buffer, sizeof buffer), 100);
  });
  const auto waitStart = std::chrono::steady_clock::now();
  EXPECT_TRUE(detail::waitUntilRead(ends[1], std::chrono::seconds(5)));
  const auto waited = std::chrono::steady_clock::now() - waitStart;
  EXPECT_GE(waited, std::chrono::milliseconds(90));
  EXPECT_LT(waited, std::chrono::seconds(4));
  reader.join();
  close(ends[0]);
  close(ends[1]);
}

TEST(DescribeTensor, UsesPyTorchDtypeNames) {
  EXPECT_EQ(detail::describeTensor(at::ones({2, 3}, at::kFloat)), "6 float32 elements on cpu");
  EXPECT_EQ(detail::describeTensor(at::Tensor()), "an undefined tensor");
}

// A one-member bootstrap: enough for the factory's agreement step in a single process.
class SoloCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "solo"; }
  void allreduce(at::Tensor&, ReduceOp, const CollectiveOptions&) override {}
  void broadcast(at::Tensor&, int, const CollectiveOptions&) override {}
  at::Tensor allgather(const at::Tensor& tensor, const CollectiveOptions&) override {
    return tensor.unsqueeze(0).clone();
  }
  void barrier(const CollectiveOptions&) override {}
  std::unique_ptr<Communicator> split(int color, int, const CollectiveOptions&) override {
    return color < 0 ? nullptr : std::make_unique<SoloCommunicator>();
  }
};

// `action` must throw a tl::Error that says `withNccl` where NCCL is built in, and that it is not
// built in elsewhere.
void expectNcclRefusal(const std::function<void()>& action, const std::string& withNccl) {
  try {
    action();
    FAIL() << "nothing was thrown";
  } catch (const tl::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(ncclAvailable() ? withNccl : "built without NCCL"));
  }
}

TEST(NcclFactory, FailsClearlyWhereNcclCannotRun) {
  if (ncclVisibleDeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(ncclVisibleDeviceCount(), 0);
  SoloCommunicator bootstrap;
  expectNcclRefusal([&] { createNcclCommunicator(bootstrap, 0); }, "cannot create an NCCL communicator");
}

// Recovery gives the job's NCCL communicator up with this; any other communicator is a caller's
// mistake, said clearly.
TEST(NcclFactory, AbandoningRefusesACommunicatorOfAnotherBackend) {
  SoloCommunicator solo;
  expectNcclRefusal([&] { abandonNcclCommunicator(solo); },
                    "given a communicator of backend 'solo', not one made by createNcclCommunicator");
}

TEST(NcclFactory, AvailabilityMatchesTheBuild) {
#if TL_HAVE_NCCL
  EXPECT_TRUE(ncclAvailable());
#else
  EXPECT_FALSE(ncclAvailable());
#endif
}

TEST(ReduceOpNames, AreLowerCaseWords) {
  EXPECT_STREQ(toString(ReduceOp::Sum), "sum");
  EXPECT_STREQ(toString(ReduceOp::Max), "max");
  EXPECT_STREQ(toString(ReduceOp::Min), "min");
}

}  // namespace
}  // namespace tl::comm
