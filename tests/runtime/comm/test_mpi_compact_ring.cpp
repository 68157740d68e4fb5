// The MPI ring's compact encoding of int64 sums (MpiCommunicatorOptions::ringEncoding): the
// bits of the plain ring, in about half the bytes for the exact reducer's sums.
#include <cstdint>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <gmock/gmock.h>

#include "common/check.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/mpi/mpi_ring_allreduce.h"
#include "tests/runtime/comm/communicator_conformance.h"
#include "tests/runtime/comm/mpi_test_world.h"

namespace tl::comm::testing {
namespace {

CollectiveOptions compactPatient() {
  CollectiveOptions options{std::chrono::seconds(60)};
  options.compactIntegers = true;
  return options;
}

std::unique_ptr<Communicator> ringWith(RingEncoding encoding, std::int64_t chunkBytes) {
  MpiCommunicatorOptions options;
  options.ringMinBytes = 0;
  options.ringChunkBytes = chunkBytes;
  options.ringEncoding = encoding;
  return createMpiWorldCommunicator(options);
}

// What the exact reducer sums: round(g * 2^41) of float32 gradients spread over 8 binades,
// different on every member, with a block of zeros and extreme values that wrap when summed.
at::Tensor quantisedGradients(int rank, std::int64_t count) {
  at::manual_seed(100 + rank);
  const at::Tensor g = at::randn({count}) * at::exp2(-at::randint(0, 8, {count}).to(at::kFloat));
  at::Tensor q = (g.to(at::kDouble) * std::ldexp(1.0, 41)).round().to(at::kLong);
  if (count > 100) q.narrow(0, 40, 40).zero_();
  if (count > 3) {
    q[1] = std::numeric_limits<std::int64_t>::max() - rank;
    q[2] = std::numeric_limits<std::int64_t>::min() + 7 * rank;
  }
  return q;
}

// Tiny and large chunks, ragged lengths: the compact ring's reduce-scatter and allreduce give
// exactly the plain ring's bits; a collective that does not allow compaction, or a float sum,
// is unaffected.
TEST(MpiCompactRing, GivesThePlainRingsBitsAtEveryChunkBoundary) {
  const int size = world().size();
  const CollectiveOptions compact = compactPatient();
  for (std::int64_t chunkBytes : {std::int64_t(8), std::int64_t(1000), std::int64_t(1) << 20}) {
    auto compactRing = ringWith(RingEncoding::Compact, chunkBytes);
    auto plainRing = ringWith(RingEncoding::Plain, chunkBytes);
    for (std::int64_t count : {std::int64_t(1), std::int64_t(size + 1), std::int64_t(1001),
                               std::int64_t(10'007), std::int64_t(100'003)}) {
      if (chunkBytes < 100 && count > 1001) continue;  // thousands of messages: slow, no news
      const at::Tensor mine = quantisedGradients(compactRing->rank(), count);
      at::Tensor viaCompact = mine.clone();
      at::Tensor viaPlain = mine.clone();
      compactRing->allreduce(viaCompact, ReduceOp::Sum, compact);
      plainRing->allreduce(viaPlain, ReduceOp::Sum, compact);
      EXPECT_TRUE(at::equal(viaCompact, viaPlain)) << count << " in chunks of " << chunkBytes;
      EXPECT_FALSE(at::equal(viaCompact, mine)) << "nothing was reduced";

      const Segment own = segmentOf(count, size, compactRing->rank());
      at::Tensor scattered = mine.clone();
      compactRing->reduceScatter(scattered, compact);
      EXPECT_TRUE(at::equal(scattered.narrow(0, own.offset, own.length),
                            viaPlain.narrow(0, own.offset, own.length)))
          << count << " in chunks of " << chunkBytes;
    }
    at::Tensor ints = contribution(compactRing->rank(), at::kLong, 5003);
    compactRing->allreduce(ints, ReduceOp::Sum, CollectiveOptions{std::chrono::seconds(60)});
    EXPECT_TRUE(at::equal(ints, expectedReduction(ReduceOp::Sum, size, at::kLong, 5003)));
    at::Tensor floats = contribution(compactRing->rank(), at::kFloat, 5003);
    compactRing->allreduce(floats, ReduceOp::Sum, compact);
    EXPECT_TRUE(at::equal(floats, expectedReduction(ReduceOp::Sum, size, at::kFloat, 5003)));
  }
}

// The ring itself: the same sums, and each member sends well under 60 % of the plain ring's
// bytes (about half: 24 significant bits and a spread of 8 binades in 64).
TEST(MpiCompactRing, SendsAboutHalfThePlainBytes) {
  const int size = world().size();
  const std::int64_t count = 200'003;
  std::int64_t sent[2] = {0, 0};
  at::Tensor sums[2];
  for (int compact = 0; compact < 2; ++compact) {
    sums[compact] = quantisedGradients(world().rank(), count);
    sums[compact].narrow(0, 1, 2).zero_();  // no extremes here: they are not what sums carry
    detail::RingAllreduce ring(detail::mpiHandle(world()), sums[compact], 1 << 14, 0, 1, {},
                               detail::RingPhases::ReduceScatterThenAllgather, compact == 1);
    ring.start();
    while (!ring.progress()) {
    }
    sent[compact] = ring.sentBytes();
  }
  EXPECT_TRUE(at::equal(sums[0], sums[1]));
  // Plain: 2(size-1) segments of count/size int64 (segments differ by one value at most).
  EXPECT_NEAR(double(sent[0]), 2.0 * (size - 1) * count / size * 8, 2.0 * (size - 1) * 8);
  const double ratio = double(sent[1]) / double(sent[0]);
  EXPECT_LT(ratio, 0.6);
  EXPECT_GT(ratio, 0.3);
  world().barrier(CollectiveOptions{std::chrono::seconds(60)});
}

// Auto compacts where the members span hosts, which it finds from their processor names: every
// process of a one-host run has the same key, and the result is the plain ring's either way.
TEST(MpiCompactRing, AutoAsksWhetherTheMembersSpanHosts) {
  const CollectiveOptions patient{std::chrono::seconds(60)};
  at::Tensor keys = at::tensor({detail::hostKey()}, at::kLong);
  const at::Tensor all = world().allgather(keys, patient);
  EXPECT_TRUE(at::equal(all, keys.expand({world().size(), 1})))
      << "mpirun -np N runs on one host here";
  EXPECT_GE(detail::hostKey(), 0);
  auto automatic = ringWith(RingEncoding::Auto, 4096);
  auto plainRing = ringWith(RingEncoding::Plain, 4096);
  at::Tensor a = quantisedGradients(world().rank(), 30'011);
  at::Tensor b = a.clone();
  automatic->allreduce(a, ReduceOp::Sum, compactPatient());
  automatic->allreduce(a, ReduceOp::Sum, compactPatient());  // asked once, answered from then on
  plainRing->allreduce(b, ReduceOp::Sum, patient);
  plainRing->allreduce(b, ReduceOp::Sum, patient);
  EXPECT_TRUE(at::equal(a, b));
}

}  // namespace
}  // namespace tl::comm::testing
