// broadcastNamedTensors and sendNamedTensorsFromSenders (est/context_exchange.h), which move
// the replica to members that join in a grow: names, dtypes, shapes and every byte arrive,
// whatever the chunk size against the tensors' sizes (a tensor across several chunks, several
// tensors in one chunk, empty tensors) and however many senders share the bytes, and the root
// (every sender) gets its own tensors back.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "est/context_exchange.h"
#include "tests/support/in_memory_ranks.h"

namespace tl::est {
namespace {

using Named = std::vector<std::pair<std::string, at::Tensor>>;

Named someTensors() {
  return {{"conv.weight", at::arange(0, 1000, at::kFloat).reshape({10, 10, 10})},
          {"empty", at::empty({0, 3}, at::kFloat)},
          {"bn.num_batches_tracked", at::full({}, 7, at::kLong)},
          {"odd", at::arange(0, 13, at::kDouble).mul(0.5)},
          {"bytes", at::arange(0, 37, at::kByte)}};
}

void expectSame(const Named& got, const Named& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first);
    EXPECT_EQ(got[i].second.scalar_type(), want[i].second.scalar_type()) << want[i].first;
    EXPECT_EQ(got[i].second.sizes(), want[i].second.sizes()) << want[i].first;
    EXPECT_TRUE(at::equal(got[i].second, want[i].second)) << want[i].first;
  }
}

TEST(NamedTensorBroadcast, EveryByteArrivesWhateverTheChunkSize) {
  const Named want = someTensors();
  for (int64_t chunk : {int64_t(1), int64_t(3), int64_t(64), int64_t(4000), int64_t(8) << 20}) {
    SCOPED_TRACE("chunk bytes " + std::to_string(chunk));
    std::vector<Named> got(3);
    tl::testing::runInMemoryRanks(3, [&](comm::Communicator& comm) {
      const Named mine = comm.rank() == 1 ? someTensors() : Named{};
      got[size_t(comm.rank())] = broadcastNamedTensors(comm, mine, 1, chunk);
    });
    for (const Named& g : got) expectSame(g, want);
  }
}

TEST(NamedTensorBroadcast, TheRootKeepsItsOwnTensorsAndNothingIsAlsoSent) {
  std::vector<Named> got(2);
  Named rootTensors = someTensors();
  tl::testing::runInMemoryRanks(2, [&](comm::Communicator& comm) {
    got[size_t(comm.rank())] = broadcastNamedTensors(comm, comm.rank() == 0 ? rootTensors : Named{}, 0, 16);
  });
  ASSERT_EQ(got[0].size(), rootTensors.size());
  EXPECT_EQ(got[0][0].second.data_ptr(), rootTensors[0].second.data_ptr()) << "the root's tensor was copied";
  expectSame(got[1], rootTensors);
  tl::testing::runInMemoryRanks(2, [&](comm::Communicator& comm) {
    EXPECT_TRUE(broadcastNamedTensors(comm, Named{}, 0).empty());
  });
}

// Every sender holds the same parts; every receiver gets all of them, whichever ranks send and
// receive, whatever the piece size against the tensors and the shares, and members that do
// neither take no part.
TEST(NamedTensorsFromSenders, EveryByteArrivesWhateverTheSendersAndPieceSize) {
  const std::vector<Named> want = {someTensors(), {}, {{"steps", at::full({1}, 42, at::kLong)}}};
  struct Layout {
    int size;
    std::vector<int> senders, receivers;
  };
  const Layout layouts[] = {{2, {0}, {1}}, {4, {0, 1}, {2, 3}}, {4, {3, 1}, {0}}, {5, {0, 2, 4}, {1, 3}},
                            {4, {1}, {2}}};
  for (const Layout& l : layouts) {
    for (int64_t piece : {int64_t(1), int64_t(7), int64_t(1000), int64_t(4) << 20}) {
      SCOPED_TRACE("size " + std::to_string(l.size) + ", " + std::to_string(l.senders.size()) + " senders, piece " +
                   std::to_string(piece));
      std::vector<std::vector<Named>> got(size_t(l.size));
      tl::testing::runInMemoryRanks(l.size, [&](comm::Communicator& comm) {
        const int r = comm.rank();
        const bool sends = std::find(l.senders.begin(), l.senders.end(), r) != l.senders.end();
        const bool receives = std::find(l.receivers.begin(), l.receivers.end(), r) != l.receivers.end();
        if (sends || receives) {
          const std::vector<Named> mine =
              sends ? std::vector<Named>{someTensors(), {}, {{"steps", at::full({1}, 42, at::kLong)}}}
                    : std::vector<Named>{};
          got[size_t(r)] = sendNamedTensorsFromSenders(comm, mine, l.senders, l.receivers, piece);
        }
        comm.barrier();
      });
      for (int r = 0; r < l.size; ++r) {
        const bool takesPart = std::count(l.senders.begin(), l.senders.end(), r) +
                                   std::count(l.receivers.begin(), l.receivers.end(), r) > 0;
        ASSERT_EQ(got[size_t(r)].size(), takesPart ? want.size() : 0u) << "rank " << r;
        for (size_t p = 0; p < got[size_t(r)].size(); ++p) expectSame(got[size_t(r)][p], want[p]);
      }
    }
  }
}

TEST(NamedTensorsFromSenders, SendersKeepTheirOwnTensors) {
  const Named mine = someTensors();
  std::vector<Named> got(3);
  tl::testing::runInMemoryRanks(3, [&](comm::Communicator& comm) {
    const std::vector<Named> parts = comm.rank() < 2 ? std::vector<Named>{mine} : std::vector<Named>{};
    got[size_t(comm.rank())] = sendNamedTensorsFromSenders(comm, parts, {0, 1}, {2}, 64).at(0);
  });
  EXPECT_EQ(got[0][0].second.data_ptr(), mine[0].second.data_ptr()) << "a sender's tensor was copied";
  expectSame(got[2], mine);
}

}  // namespace
}  // namespace tl::est
