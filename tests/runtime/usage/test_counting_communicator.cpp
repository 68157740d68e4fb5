// CountingCommunicator over real in-memory ranks: the calls still work, and the log holds the
// bytes of the bandwidth-optimal algorithm for each call.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>
#include <chrono>
#include <mutex>
#include <thread>

#include "runtime/usage/counting_communicator.h"
#include "runtime/usage/usage_recorder.h"
#include "tests/support/in_memory_ranks.h"

namespace {

using namespace tl;

TEST(TrafficBytes, FollowTheRingAndTreeFormulas) {
  EXPECT_EQ(usage::allreduceBytes(4000, 2).sent, 4000);   // 2(N-1)/N = 1
  EXPECT_EQ(usage::allreduceBytes(3000, 3).received, 4000);  // 4/3
  EXPECT_EQ(usage::allreduceBytes(4000, 1).sent, 0);
  EXPECT_EQ(usage::broadcastBytes(100, 3, true).sent, 100);
  EXPECT_EQ(usage::broadcastBytes(100, 3, false).received, 100);
  EXPECT_EQ(usage::allgatherBytes(10, 4).sent, 30);
  EXPECT_EQ(usage::halfRingBytes(3000, 3).sent, 2000);  // (N-1)/N: half an allreduce
  EXPECT_EQ(usage::halfRingBytes(3000, 1).received, 0);
}

// The exact reducer's pair: a reduce-scatter of int64 sums and an allgather of float32 means
// log 1.5x the bytes of an fp32 allreduce of as many elements.
TEST(CountingCommunicator, LogsTheSegmentedCollectivesAsHalfRings) {
  std::mutex m;
  std::vector<int64_t> sent(3);
  tl::testing::runInMemoryRanks(3, [&](comm::Communicator& inner) {
    usage::TrafficLog log;
    auto comm = usage::countTraffic(inner, log);
    at::Tensor sums = at::ones({300}, at::kLong);  // 2400 bytes
    comm->startReduceScatter(sums)->wait();
    at::Tensor means = at::ones({300}, at::kFloat);  // 1200 bytes
    comm->startAllgatherSegments(means)->wait();
    std::lock_guard<std::mutex> lock(m);
    sent[comm->rank()] = log.sentTotal();
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(sent[r], (2400 + 1200) * 2 / 3) << r;
  EXPECT_EQ(2 * sent[0], 3 * usage::allreduceBytes(1200, 3).sent);
}

TEST(CountingCommunicator, ForwardsCallsAndLogsTheirBytes) {
  std::mutex m;
  std::vector<int64_t> sent(3), received(3), events(3);
  tl::testing::runInMemoryRanks(3, [&](comm::Communicator& inner) {
    usage::TrafficLog log;
    auto comm = usage::countTraffic(inner, log);
    at::Tensor t = at::ones({300}, at::kFloat);  // 1200 bytes
    comm->allreduce(t, comm::ReduceOp::Sum);
    EXPECT_TRUE(at::equal(t, at::full({300}, 3.0f)));
    at::Tensor b = at::full({10}, double(comm->rank()), at::kDouble);  // 80 bytes
    comm->broadcast(b, 1);
    EXPECT_TRUE(at::equal(b, at::full({10}, 1.0, at::kDouble)));
    at::Tensor g = comm->allgather(at::ones({5}, at::kLong));  // 40 bytes each
    EXPECT_EQ(g.size(0), 3);
    comm->barrier();
    auto child = comm->split(0, comm->rank());
    at::Tensor c = at::ones({3}, at::kFloat);  // 12 bytes over the child, same log
    child->allreduce(c, comm::ReduceOp::Sum);
    const auto logged = log.take();
    std::lock_guard<std::mutex> lock(m);
    sent[comm->rank()] = log.sentTotal();
    received[comm->rank()] = log.receivedTotal();
    events[comm->rank()] = int64_t(logged.size());
    for (const auto& e : logged) EXPECT_LE(e.start, e.end);
  });
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE(r);
    const int64_t broadcastSent = r == 1 ? 80 : 0, broadcastReceived = r == 1 ? 0 : 80;
    EXPECT_EQ(sent[r], 1200 * 4 / 3 + broadcastSent + 2 * 40 + 12 * 4 / 3);
    EXPECT_EQ(received[r], 1200 * 4 / 3 + broadcastReceived + 2 * 40 + 12 * 4 / 3);
    EXPECT_EQ(events[r], 4);  // allreduce, broadcast, allgather, child allreduce (no barrier)
  }
}

// A backend whose started allreduce completes on the second test(): the wrapper must hand
// the start on (not fall back to the base class's blocking allreduce, which would stall an
// overlapped backward) and log the collective once, when it is found complete.
class StartedOnly final : public comm::Communicator {
 public:
  int starts = 0, blockingCalls = 0;
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string backend() const override { return "fake"; }
  void allreduce(at::Tensor&, comm::ReduceOp, const comm::CollectiveOptions&) override { ++blockingCalls; }
  std::unique_ptr<comm::PendingCollective> startAllreduce(at::Tensor&, comm::ReduceOp,
                                                          const comm::CollectiveOptions&) override {
    ++starts;
    struct SecondTest final : comm::PendingCollective {
      int tests = 0;
      bool test() override { return ++tests >= 2; }
      void wait() override { tests = 2; }
    };
    return std::make_unique<SecondTest>();
  }
  void broadcast(at::Tensor&, int, const comm::CollectiveOptions&) override {}
  at::Tensor allgather(const at::Tensor& t, const comm::CollectiveOptions&) override { return t; }
  void barrier(const comm::CollectiveOptions&) override {}
  std::unique_ptr<comm::Communicator> split(int, int, const comm::CollectiveOptions&) override { return nullptr; }
};

TEST(CountingCommunicator, KeepsAStartedAllreduceStartedAndLogsItOnceWhenComplete) {
  StartedOnly inner;
  usage::TrafficLog log;
  auto comm = usage::countTraffic(inner, log);
  at::Tensor t = at::ones({250}, at::kFloat);  // 1000 bytes
  auto pending = comm->startAllreduce(t, comm::ReduceOp::Sum);
  EXPECT_EQ(inner.starts, 1);
  EXPECT_EQ(inner.blockingCalls, 0);
  EXPECT_FALSE(pending->test());
  EXPECT_EQ(log.sentTotal(), 0);  // not complete yet: nothing logged
  EXPECT_TRUE(pending->test());
  pending->wait();
  EXPECT_EQ(log.sentTotal(), 1000);
  EXPECT_EQ(log.take().size(), 1u);
}

TEST(UsageRecorder, WindowsCarryTheTrafficOfTheirSteps) {
  tl::testing::runInMemoryRanks(2, [&](comm::Communicator& inner) {
    usage::UsageOptions options;
    options.windowSteps = 2;
    usage::UsageRecorder recorder(options);
    auto comm = usage::countTraffic(inner, recorder.traffic());
    recorder.start();
    at::Tensor grad = at::ones({1000}, at::kFloat);  // 4000 bytes: 4000 each way per step (N = 2)
    comm->allreduce(grad, comm::ReduceOp::Sum);      // before the first boundary: not counted
    EXPECT_FALSE(recorder.markStep(1).has_value());
    std::vector<nlohmann::json> windows;
    for (int64_t step = 2; step <= 5; ++step) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the step's compute: a gap
      comm->allreduce(grad, comm::ReduceOp::Sum);
      if (auto w = recorder.markStep(step)) windows.push_back(*w);
    }
    ASSERT_EQ(windows.size(), 2u);  // steps 1..3 and 3..5
    for (const auto& w : windows) {
      EXPECT_EQ(w["type"], "usage");
      EXPECT_EQ(w["tx_bytes"], 8000);
      EXPECT_EQ(w["tx_bytes_per_step"], 4000.0);
      EXPECT_EQ(w["tx_bursts"], 2);
      EXPECT_GT(w["tx_burst_s"].get<double>(), 0);
      EXPECT_GT(w["tx_burst_mb_per_s"].get<double>(), 0);
    }
    const auto summary = recorder.finish();
    EXPECT_EQ(summary["tx_bytes"], 4 * 4000);
    EXPECT_EQ(summary["rx_bytes_per_step"], 4000.0);
    EXPECT_EQ(summary["first_step"], 1);
    EXPECT_EQ(summary["last_step"], 5);
    EXPECT_GT(summary["memory_burst_mb"].get<double>() + summary["memory_idle_s"].get<double>(), 0);
  });
}

TEST(InterfaceBytes, ReadsProcNetDevFormat) {
  const std::string path = ::testing::TempDir() + "/net_dev";
  {
    std::ofstream out(path);
    out << "Inter-|   Receive                                                |  Transmit\n"
           " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
           "    lo:  123456     100    0    0    0     0          0         0   654321     100    0    0    0     0       0          0\n"
           "  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n";
  }
  const auto j = usage::readInterfaceBytes(path);
  EXPECT_EQ(j["lo"]["rx_bytes"], 123456);
  EXPECT_EQ(j["lo"]["tx_bytes"], 654321);
  EXPECT_EQ(j["eth0"]["tx_bytes"], 2000);
  EXPECT_TRUE(usage::readInterfaceBytes("/nonexistent/net/dev").empty());
}

}  // namespace
