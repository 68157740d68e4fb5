// In-memory backend: point-to-point as the conformance suite checks it for MPI, plus what
// threads add: a receiver that waits before the message is sent (baton mode), a message of
// the wrong size and a receive nobody answers fail the communicator.
#include <gmock/gmock.h>

#include "common/check.h"
#include "runtime/comm/inmemory/inmemory_communicator.h"
#include "tests/runtime/comm/communicator_conformance.h"
#include "tests/support/in_memory_ranks.h"

namespace tl::comm::testing {
namespace {

// The in-memory test harness (tests/support/in_memory_ranks.h).
namespace ranks = tl::testing;

TEST(InMemoryPointToPoint, MessagesUnderOneTagArriveInOrderWhoeverWaitsFirst) {
  for (bool serialized : {true, false}) {
    ranks::InMemoryRunOptions options;
    options.world.serialized = serialized;
    ranks::runInMemoryRanks(
        3,
        [&](Communicator& comm) {
          ASSERT_TRUE(comm.pointToPoint());
          const int rank = comm.rank();
          auto pair = comm.split(rank < 2 ? 0 : -1, rank, ranks::kPatient);
          if (rank == 2) {
            // Waits before anything was sent: rank 0 sends only after a collective of ranks 0, 1.
            at::Tensor first = at::zeros({5}, at::kLong), second = at::zeros({2}, at::kDouble);
            auto a = comm.startReceive(first, 0, 7, ranks::kPatient);
            auto b = comm.startReceive(second, 0, 7, ranks::kPatient);
            if (serialized) {
              EXPECT_FALSE(b->test() || a->test());  // nothing was sent yet
            }
            b->wait();
            a->wait();
            EXPECT_TRUE(at::equal(first, at::arange(5, at::kLong)));
            EXPECT_TRUE(at::equal(second, at::full({2}, 0.5, at::kDouble)));
          } else {
            pair->barrier(ranks::kPatient);
            if (rank == 0) {
              comm.startSend(at::arange(5, at::kLong), 2, 7, ranks::kPatient)->wait();
              at::Tensor half = at::full({2}, 0.5, at::kDouble);
              auto send = comm.startSend(half, 2, 7, ranks::kPatient);
              half.fill_(9);  // a send copies at its start
              send->wait();
            }
          }
          comm.barrier(ranks::kPatient);
        },
        options);
  }
}

TEST(InMemoryPointToPoint, AMessageOfTheWrongSizeFailsTheCommunicator) {
  EXPECT_THROW(ranks::runInMemoryRanks(2,
                                [&](Communicator& comm) {
                                  if (comm.rank() == 0) {
                                    comm.startSend(at::ones({3}), 1, 0, ranks::kPatient)->wait();
                                  } else {
                                    at::Tensor four = at::zeros({4});
                                    try {
                                      comm.startReceive(four, 0, 0, ranks::kPatient)->wait();
                                    } catch (const tl::Error& e) {
                                      EXPECT_THAT(e.what(), ::testing::HasSubstr("sent 12 bytes"));
                                      throw;
                                    }
                                  }
                                  comm.barrier(ranks::kPatient);
                                }),
               tl::Error);
}

TEST(InMemoryPointToPoint, AReceiveNobodyAnswersTimesOut) {
  EXPECT_THROW(ranks::runInMemoryRanks(2,
                                [&](Communicator& comm) {
                                  at::Tensor t = at::zeros({1});
                                  if (comm.rank() == 1)
                                    comm.startReceive(t, 0, 0, CollectiveOptions{std::chrono::milliseconds(200)})->wait();
                                  comm.barrier(ranks::kPatient);
                                }),
               tl::Error);
}

}  // namespace
}  // namespace tl::comm::testing
