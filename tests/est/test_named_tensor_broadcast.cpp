// broadcastNamedTensors (est/context_exchange.h), which moves the replica to members that join
// in a grow: names, dtypes, shapes and every byte arrive, whatever the chunk size against the
// tensors' sizes (a tensor across several chunks, several tensors in one chunk, empty tensors),
// and the root gets its own tensors back.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

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

}  // namespace
}  // namespace tl::est
