// EstFibers: fixed order, context switch in the scheduler, per-EST generator state.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <string>
#include <thread>

#include "common/check.h"
#include "est/est_context.h"
#include "est/fiber_scheduler.h"

namespace {

using tl::est::ContextSwitcher;
using tl::est::EstFibers;

// Records every switch.
struct RecordingSwitcher : ContextSwitcher {
  std::string log;
  void switchOut(int est) override { log += "o" + std::to_string(est); }
  void switchIn(int est) override { log += "i" + std::to_string(est); }
};

// Runs `body` on a fresh thread: a thread's fiber scheduler is installed once per thread.
template <typename F>
void onFreshThread(F body) {
  std::thread t(body);
  t.join();
}

TEST(EstFibers, TurnTakingRunsInOrderAndSwitchesOncePerHandOver) {
  onFreshThread([] {
    RecordingSwitcher sw;
    std::string trace;
    {
      EstFibers fibers(sw);
      boost::fibers::mutex m;
      boost::fibers::condition_variable cv;
      int turn = 0;
      for (int est = 0; est < 3; ++est) {
        fibers.launch(est, [&, est] {
          for (int round = 0; round < 2; ++round) {
            std::unique_lock<boost::fibers::mutex> lock(m);
            cv.wait(lock, [&] { return turn == round * 3 + est; });
            trace += std::to_string(est);
            EXPECT_EQ(EstFibers::currentEst(), est);
            ++turn;
            cv.notify_all();
          }
        });
      }
      fibers.joinAll();
    }
    EXPECT_EQ(trace, "012012");
    // Each EST's state is installed before its fiber runs and saved before another EST's
    // fiber or the main fiber runs.
    EXPECT_EQ(sw.log.substr(0, 8), "i0o0i1o1") << sw.log;
    EXPECT_EQ(sw.log.back(), '2') << sw.log;
  });
}

TEST(EstFibers, GeneratorStateFollowsEachEst) {
  // Two ESTs drawing dropout-like random numbers interleaved must see exactly the streams
  // they would see alone.
  onFreshThread([] {
    auto ctxA = tl::est::initialContext(0, 42, c10::Device(c10::kCPU));
    auto ctxB = tl::est::initialContext(1, 42, c10::Device(c10::kCPU));
    auto alone = [](const tl::est::EstContext& c) {
      at::Generator gen = at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
      gen.set_state(c.cpuRngState);
      at::Tensor first = at::rand({5});
      at::Tensor second = at::rand({5});
      return std::make_pair(first, second);
    };
    auto refA = alone(ctxA), refB = alone(ctxB);
    EXPECT_FALSE(at::equal(refA.first, refB.first)) << "ESTs must get different streams";

    std::vector<tl::est::EstContext*> byRank = {&ctxA, &ctxB};
    tl::est::GeneratorSwitcher sw(byRank, c10::Device(c10::kCPU));
    at::Tensor gotA1, gotA2, gotB1, gotB2;
    {
      EstFibers fibers(sw);
      boost::fibers::mutex m;
      boost::fibers::condition_variable cv;
      int turn = 0;
      auto body = [&](int est, at::Tensor& d1, at::Tensor& d2) {
        std::unique_lock<boost::fibers::mutex> lock(m);
        cv.wait(lock, [&] { return turn == est; });
        d1 = at::rand({5});
        ++turn;
        cv.notify_all();
        cv.wait(lock, [&] { return turn == 2 + est; });
        d2 = at::rand({5});
        ++turn;
        cv.notify_all();
      };
      fibers.launch(0, [&] { body(0, gotA1, gotA2); });
      fibers.launch(1, [&] { body(1, gotB1, gotB2); });
      fibers.joinAll();
    }
    // Each EST's draws continue its own stream, whatever the other drew in between.
    EXPECT_TRUE(at::equal(gotA1, refA.first));
    EXPECT_TRUE(at::equal(gotB1, refB.first));
    EXPECT_TRUE(at::equal(gotA2, refA.second));
    EXPECT_TRUE(at::equal(gotB2, refB.second));
  });
}

TEST(EstContext, PackRoundTrip) {
  auto c = tl::est::initialContext(3, 7, c10::Device(c10::kCPU));
  c.cursor.epoch = 5;
  c.cursor.position = 123;
  auto bytes = tl::est::packContext(c);
  auto d = tl::est::unpackContext(bytes.data(), bytes.size());
  EXPECT_EQ(d.logicalRank, 3);
  EXPECT_EQ(d.cursor.epoch, 5);
  EXPECT_EQ(d.cursor.position, 123);
  EXPECT_TRUE(at::equal(d.cpuRngState, c.cpuRngState));
  EXPECT_FALSE(d.deviceRngState.defined());
  EXPECT_THROW(tl::est::unpackContext(bytes.data(), bytes.size() - 10), tl::Error);
}

}  // namespace
