// Small-object collectives (runtime/comm/json_collectives.h) on the in-memory backend: values
// of every size and kind arrive whole and in rank order, and a value that fits the inline width
// costs one collective.
#include <cmath>

#include <gmock/gmock.h>

#include "runtime/comm/json_collectives.h"
#include "tests/support/in_memory_ranks.h"

namespace tl::comm::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using tl::testing::runInMemoryRanks;

// Forwards to the in-memory communicator and counts the collectives that reach it.
class CountingCommunicator final : public Communicator {
 public:
  explicit CountingCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  void allreduce(at::Tensor& t, ReduceOp op, const CollectiveOptions& o) override { ++calls; inner_.allreduce(t, op, o); }
  void broadcast(at::Tensor& t, int root, const CollectiveOptions& o) override { ++calls; inner_.broadcast(t, root, o); }
  at::Tensor allgather(const at::Tensor& t, const CollectiveOptions& o) override { ++calls; return inner_.allgather(t, o); }
  void barrier(const CollectiveOptions& o) override { ++calls; inner_.barrier(o); }
  std::unique_ptr<Communicator> split(int color, int key, const CollectiveOptions& o) override {
    ++calls;
    return inner_.split(color, key, o);
  }
  int calls = 0;

 private:
  Communicator& inner_;
};

json recordOf(int rank, size_t textBytes) {
  return {{"rank", rank}, {"host", std::string(textBytes, char('a' + rank))}, {"pid", 1000 + rank}};
}

TEST(JsonCollectives, AllgatherReturnsEveryMembersRecordInRankOrder) {
  for (int size : {1, 2, 3}) {
    runInMemoryRanks(size, [&](Communicator& comm) {
      const auto all = allgatherJson(comm, recordOf(comm.rank(), 10));
      ASSERT_EQ(all.size(), size_t(size));
      for (int r = 0; r < size; ++r) EXPECT_EQ(all[size_t(r)], recordOf(r, 10)) << "rank " << r;
    });
  }
}

TEST(JsonCollectives, OneCollectiveWhileEveryValueFitsAndOneMoreForTheRest) {
  // Rank 1's record is larger than the inline width only in the second round.
  for (size_t rank1Bytes : {size_t(20), size_t(5000)}) {
    runInMemoryRanks(3, [&](Communicator& inner) {
      CountingCommunicator comm(inner);
      const size_t bytes = comm.rank() == 1 ? rank1Bytes : 3;
      const auto all = allgatherJson(comm, recordOf(comm.rank(), bytes));
      EXPECT_EQ(comm.calls, rank1Bytes > 200 ? 2 : 1);
      for (int r = 0; r < 3; ++r) EXPECT_EQ(all[size_t(r)], recordOf(r, r == 1 ? rank1Bytes : 3));
    });
  }
}

TEST(JsonCollectives, BroadcastGivesTheRootsValueToEveryMemberFromAnyRoot) {
  // {"text": 240 characters} is 248 bytes of CBOR: the inline width (256) less the length.
  for (size_t bytes : {size_t(0), size_t(240), size_t(241), size_t(100000)}) {
    runInMemoryRanks(3, [&](Communicator& inner) {
      CountingCommunicator comm(inner);
      const int root = 2;
      // The others pass something else: only the root's value counts.
      const json mine = comm.rank() == root ? json{{"text", std::string(bytes, 'x')}} : json("ignored");
      const json got = broadcastJson(comm, mine, root);
      EXPECT_EQ(got, (json{{"text", std::string(bytes, 'x')}})) << bytes << " bytes";
      EXPECT_EQ(comm.calls, bytes > 240 ? 2 : 1) << bytes << " bytes";
    });
  }
}

TEST(JsonCollectives, DoublesNanAndNullArriveExactly) {
  runInMemoryRanks(2, [&](Communicator& comm) {
    const double third = 1.0 / 3.0;
    const json mine = {{"seconds", third * (comm.rank() + 1)}, {"nan", std::nan("")}, {"none", nullptr},
                       {"ints", {-1, 0, int64_t(1) << 62}}};
    const auto all = allgatherJson(comm, mine);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(all[size_t(r)]["seconds"].get<double>(), third * (r + 1));  // bit for bit
      EXPECT_TRUE(std::isnan(all[size_t(r)]["nan"].get<double>()));
      EXPECT_TRUE(all[size_t(r)]["none"].is_null());
      EXPECT_EQ(all[size_t(r)]["ints"], (json{-1, 0, int64_t(1) << 62}));
    }
    const json command = broadcastJson(comm, comm.rank() == 0 ? json(nullptr) : json(7), 0);
    EXPECT_TRUE(command.is_null());
  });
}

TEST(JsonCollectives, AnInlineWidthWithoutRoomForTheLengthIsRefused) {
  runInMemoryRanks(1, [&](Communicator& comm) {
    JsonCollectiveOptions o;
    o.inlineBytes = 8;
    try {
      allgatherJson(comm, json(1), o);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("inlineBytes 8"));
    }
  });
}

}  // namespace
}  // namespace tl::comm::testing
