// In-memory backend: baton mode runs one rank at a time, hands over in a fixed order, and gives
// each rank libtorch's CPU generator as its own process would have it.
#include <future>
#include <thread>

#include <gmock/gmock.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "common/check.h"
#include "runtime/comm/inmemory/inmemory_communicator.h"
#include "tests/support/in_memory_ranks.h"

namespace tl::comm::testing {
namespace {

using ::testing::HasSubstr;
using tl::testing::InMemoryRunOptions;
using tl::testing::kPatient;
using tl::testing::runInMemoryRanks;

// Read, yield, write back: any interleaving of two ranks between collectives loses increments
// and breaks the log into runs shorter than kSteps.
TEST(InMemoryBaton, RanksNeverInterleaveBetweenCollectives) {
  constexpr int kRanks = 3, kRounds = 4, kSteps = 20;
  int counter = 0;  // deliberately not atomic
  std::vector<int> log;
  runInMemoryRanks(kRanks, [&](Communicator& comm) {
    for (int round = 0; round < kRounds; ++round) {
      for (int step = 0; step < kSteps; ++step) {
        const int seen = counter;
        std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        counter = seen + 1;
        log.push_back(comm.rank());
      }
      comm.barrier(kPatient);
    }
  });
  EXPECT_EQ(counter, kRanks * kRounds * kSteps);
  ASSERT_EQ(log.size(), std::size_t(kRanks * kRounds * kSteps));
  for (std::size_t run = 0; run < log.size(); run += kSteps)
    for (int step = 1; step < kSteps; ++step)
      EXPECT_EQ(log[run + step], log[run]) << "rank " << log[run + step] << " ran inside rank "
                                           << log[run] << "'s stretch at " << run + step;
}

// The baton goes to the next runnable rank after the one that blocks; the last member to reach
// a collective keeps it. So this order is the only one possible.
TEST(InMemoryBaton, HandsOverInAFixedOrder) {
  std::vector<std::string> log;
  runInMemoryRanks(3, [&](Communicator& comm) {
    const std::string rank = std::to_string(comm.rank());
    log.push_back(rank + "a");
    comm.barrier(kPatient);
    log.push_back(rank + "b");
    comm.barrier(kPatient);
    log.push_back(rank + "c");
  });
  EXPECT_EQ(log, (std::vector<std::string>{"0a", "1a", "2a", "2b", "0b", "1b", "1c", "2c", "0c"}));
}

// Without the baton the ranks really run at once: two ranks meet outside the communicator,
// which in baton mode could never happen.
TEST(InMemoryBaton, ConcurrentModeRunsRanksAtTheSameTime) {
  InMemoryRunOptions options;
  options.world.serialized = false;
  std::promise<void> rankOneRunning;
  std::shared_future<void> seen = rankOneRunning.get_future().share();
  runInMemoryRanks(
      2,
      [&](Communicator& comm) {
        if (comm.rank() == 1) rankOneRunning.set_value();
        if (comm.rank() == 0) {
          EXPECT_EQ(seen.wait_for(std::chrono::seconds(10)), std::future_status::ready);
        }
        comm.barrier(kPatient);
      },
      options);
}

TEST(InMemoryBaton, RefusesCallsFromAThreadThatIsNotTheRank) {
  for (bool serialized : {true, false}) {
    InMemoryRunOptions options;
    options.world.serialized = serialized;
    runInMemoryRanks(
        2,
        [&](Communicator& comm) {
          std::string message;
          std::thread other([&] {
            try {
              comm.barrier(kPatient);
            } catch (const Error& e) {
              message = e.what();
            }
          });
          other.join();
          EXPECT_THAT(message, HasSubstr("from a thread other than the one that joined"));
          comm.barrier(kPatient);  // still usable
        },
        options);
  }
}

struct Draws {
  at::Tensor unseeded, first, second;
};

// What one rank draws from the process's default CPU generator: before seeding (a fresh process
// has libtorch's default seed), after seeding, and after a collective.
Draws drawAsRank(int rank, Communicator* comm) {
  Draws draws;
  draws.unseeded = at::rand({3});
  at::manual_seed(1000 + rank);
  draws.first = at::randn({4});
  if (comm != nullptr) {
    at::Tensor tensor = at::ones({1}, at::kFloat);
    comm->allreduce(tensor, ReduceOp::Sum, kPatient);
  }
  draws.second = at::randn({4});
  return draws;
}

std::vector<Draws> drawOnRanks(int size, bool perRankCpuGenerator) {
  std::vector<Draws> draws(size);
  InMemoryRunOptions options;
  options.world.perRankCpuGenerator = perRankCpuGenerator;
  runInMemoryRanks(
      size, [&](Communicator& comm) { draws[comm.rank()] = drawAsRank(comm.rank(), &comm); },
      options);
  return draws;
}

// Each rank alone, as if it were its own process: a fresh generator, then the same draws.
Draws drawAlone(int rank) {
  at::Generator gen = at::globalContext().defaultGenerator(at::kCPU);
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(at::make_generator<at::CPUGeneratorImpl>(c10::default_rng_seed_val)
                      .get_state());
  }
  return drawAsRank(rank, nullptr);
}

TEST(InMemoryBaton, EachRankDrawsFromTheGlobalGeneratorAsInItsOwnProcess) {
  constexpr int kRanks = 3;
  at::manual_seed(77);
  const at::Tensor before = at::rand({5});
  at::manual_seed(77);
  const std::vector<Draws> together = drawOnRanks(kRanks, /*perRankCpuGenerator=*/true);
  // The caller's generator is as the world found it.
  EXPECT_TRUE(at::equal(at::rand({5}), before));

  for (int rank = 0; rank < kRanks; ++rank) {
    SCOPED_TRACE(rank);
    const Draws alone = drawAlone(rank);
    EXPECT_TRUE(at::equal(together[rank].unseeded, alone.unseeded));
    EXPECT_TRUE(at::equal(together[rank].first, alone.first));
    EXPECT_TRUE(at::equal(together[rank].second, alone.second));
    if (rank > 0) {
      EXPECT_FALSE(at::equal(together[rank].first, together[0].first));
    }
  }
}

// The check above can fail: with one shared generator, rank 0's draw after the collective comes
// after ranks 1 and 2 reseeded it.
TEST(InMemoryBaton, ASharedGeneratorWouldGiveOtherDraws) {
  const std::vector<Draws> shared = drawOnRanks(3, /*perRankCpuGenerator=*/false);
  EXPECT_FALSE(at::equal(shared[0].second, drawAlone(0).second));
}

}  // namespace
}  // namespace tl::comm::testing
