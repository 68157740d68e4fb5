// Placement independence of the exact reduction, on real processes (run under mpirun -np 1..4).
//
// Each run reduces the same synthetic jobs (N = 4 and N = 7 logical workers, several steps with
// first-step, overflow and precision replays) with its processes holding different sets of
// workers, and compares the bits of every output with a one-process reference that each rank
// computes alone on a communicator of its own. Rank 0 writes the hash of the bits its P
// processes produced to $TL_TEST_TMP/exact_placement/np<P>_N<N>.txt; a later CTest test checks
// that every np wrote the same one. The fp32 reducer runs the same placements without that
// guarantee; what it does promise is asserted: the same placement twice gives the same bits, the
// reference's own order on one process gives the reference's bits, and every placement's mean
// is the exact one to within float rounding. Whether its bits moved is reported. Every exact
// placement also runs the reducer's int64-allreduce path beside its default reduce-scatter path
// (ExactCollectives): the same bits and replays.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/runtime/comm/mpi_test_world.h"
#include "tests/runtime/reduce/reduce_test_support.h"

namespace tl::reduce {
namespace {

using testing::Layout;
using testing::SyntheticJob;
using Placement = std::vector<std::vector<int>>;  // the workers of each process, in local order

struct Variant {
  Placement placement;
  int64_t bucketBytes;
  Layout layout;
};

std::string describe(const Placement& p) {
  std::ostringstream os;
  for (size_t r = 0; r < p.size(); ++r) {
    os << (r ? " | " : "");
    for (size_t i = 0; i < p[r].size(); ++i) os << (i ? "," : "") << p[r][i];
    if (p[r].empty()) os << "-";
  }
  return os.str();
}

// Placements for P processes: contiguous splits, interleaved and reversed ones, a process with
// no worker; varied buckets and one strided layout (the generic ATen path).
std::vector<Variant> variantsFor(int64_t workers, int processes) {
  const int64_t small = 1 << 12, tiny = 64, large = 25 << 20;
  std::vector<Variant> v;
  if (workers == 4) {
    switch (processes) {
      case 1: v = {{{{0, 1, 2, 3}}, small, Layout::Strided}, {{{3, 2, 1, 0}}, tiny, Layout::Contiguous}}; break;
      case 2: v = {{{{0, 1}, {2, 3}}, large, Layout::Contiguous}, {{{0, 1, 2}, {3}}, small, Layout::Contiguous},
                   {{{3, 1}, {0, 2}}, tiny, Layout::Strided}, {{{0, 1, 2, 3}, {}}, large, Layout::Contiguous}}; break;
      case 3: v = {{{{0}, {1, 2}, {3}}, large, Layout::Contiguous}, {{{2}, {0}, {3, 1}}, tiny, Layout::Strided}}; break;
      case 4: v = {{{{0}, {1}, {2}, {3}}, large, Layout::Contiguous}, {{{3}, {2}, {1}, {0}}, small, Layout::Strided}}; break;
    }
  } else {
    switch (processes) {
      case 1: v = {{{{6, 5, 4, 3, 2, 1, 0}}, small, Layout::Contiguous}}; break;
      case 2: v = {{{{0, 1, 2, 3}, {4, 5, 6}}, large, Layout::Contiguous}, {{{6, 0}, {1, 2, 3, 4, 5}}, tiny, Layout::Strided}}; break;
      case 3: v = {{{{0, 1}, {2, 3, 4}, {5, 6}}, large, Layout::Contiguous}, {{{0, 3, 6}, {1, 4}, {2, 5}}, small, Layout::Contiguous}}; break;
      case 4: v = {{{{0, 1}, {2, 3}, {4, 5}, {6}}, large, Layout::Contiguous}, {{{0}, {1, 2, 3, 4}, {}, {5, 6}}, tiny, Layout::Strided}}; break;
    }
  }
  return v;
}

std::filesystem::path hashFile(int processes, int64_t workers) {
  const char* tmp = std::getenv("TL_TEST_TMP");
  const auto dir = std::filesystem::path(tmp ? tmp : "/tmp/tl-test") / "exact_placement";
  std::filesystem::create_directories(dir);
  return dir / ("np" + std::to_string(processes) + "_N" + std::to_string(workers) + ".txt");
}

SyntheticJob jobWith(int64_t workers) {
  SyntheticJob job;
  job.workers = workers;
  job.seed = uint64_t(workers) * 17;
  return job;
}

class ExactPlacement : public ::testing::TestWithParam<int64_t> {};

TEST_P(ExactPlacement, BitsDoNotDependOnPlacement) {
  comm::Communicator& world = comm::testing::world();
  const int rank = world.rank(), processes = world.size();
  const SyntheticJob job = jobWith(GetParam());
  const auto variants = variantsFor(job.workers, processes);
  ASSERT_FALSE(variants.empty()) << "no placements for np=" << processes;
  if (rank == 0) std::filesystem::remove(hashFile(processes, job.workers));  // no stale result

  // The reference: all N workers in one process, on a communicator of this rank alone.
  std::unique_ptr<comm::Communicator> alone = world.split(rank, 0);
  const auto exactRef = testing::runJob(*createExactReducer(*alone, job.params(), job.names(), 25 << 20),
                                        job, testing::allWorkers(job.workers));
  const auto fp32Ref = testing::runJob(*createFp32Reducer(*alone, job.params(), 25 << 20), job,
                                       testing::allWorkers(job.workers));
  EXPECT_EQ(exactRef.replays, SyntheticJob::kExpectedReplays);

  int fp32Moved = 0;
  std::string firstPlacementSha;
  for (const Variant& v : variants) {
    const auto& mine = v.placement[size_t(rank)];
    auto exact = createExactReducer(world, job.params(), job.names(), v.bucketBytes);
    const auto got = testing::runJob(*exact, job, mine, v.layout, /*keepOutputs=*/true);
    // EXPECT, not ASSERT: every rank must go on to the same collectives.
    EXPECT_EQ(got.sha256, exactRef.sha256) << "placement " << describe(v.placement);
    EXPECT_EQ(got.replays, exactRef.replays) << "placement " << describe(v.placement);
    // The int64 allreduce of the sums, which the reduce-scatter path (the default) replaced:
    // the same bits and replays, side by side on the same processes.
    auto viaAllreduce = createExactReducer(world, job.params(), job.names(), v.bucketBytes,
                                           ExactCollectives::Allreduce);
    const auto old = testing::runJob(*viaAllreduce, job, mine, v.layout);
    EXPECT_EQ(old.sha256, got.sha256) << "allreduce path, placement " << describe(v.placement);
    EXPECT_EQ(old.replays, got.replays) << "allreduce path, placement " << describe(v.placement);
    if (firstPlacementSha.empty()) firstPlacementSha = got.sha256;
    // The batched path that device tensors take, here on CPU tensors: the same bits (on each
    // np's first placement; test_exact_reducer covers the other bucketings and layouts).
    if (&v == &variants.front()) {
      auto batched = createExactReducer(world, job.params(), job.names(), v.bucketBytes,
                                        ExactCollectives::ReduceScatter, ExactKernels::Batched);
      const auto viaBatched = testing::runJob(*batched, job, mine, v.layout);
      EXPECT_EQ(viaBatched.sha256, got.sha256) << "batched path, placement " << describe(v.placement);
      EXPECT_EQ(viaBatched.replays, got.replays) << "batched path, placement " << describe(v.placement);
    }

    auto fp32 = createFp32Reducer(world, job.params(), v.bucketBytes);
    const auto fp32Got = testing::runJob(*fp32, job, mine, v.layout, /*keepOutputs=*/true);
    auto fp32Again = createFp32Reducer(world, job.params(), v.bucketBytes);
    EXPECT_EQ(testing::runJob(*fp32Again, job, mine, v.layout).sha256, fp32Got.sha256)
        << "fp32 is not deterministic for placement " << describe(v.placement);
    if (processes == 1 && mine == testing::allWorkers(job.workers)) {
      EXPECT_EQ(fp32Got.sha256, fp32Ref.sha256) << "fp32 with the reference's own order";
    }
    for (size_t step = 0; step < fp32Got.outputs.size(); ++step) {
      // A float sum of N terms is off by at most about N ulps of the largest partial sum.
      std::vector<at::Tensor> absSum;
      for (int w = 0; w < job.workers; ++w) {
        const auto g = job.gradients(int(step), w);
        for (size_t t = 0; t < g.size(); ++t) {
          if (w == 0) absSum.push_back(g[t].abs());
          else absSum[t] += g[t].abs();
        }
      }
      for (size_t t = 0; t < fp32Got.outputs[step].size(); ++t) {
        const at::Tensor error = (fp32Got.outputs[step][t] - got.outputs[step][t]).abs();
        EXPECT_TRUE((error <= absSum[t] * std::ldexp(1.0, -20)).all().item<bool>())
            << "fp32 mean far from the exact one: step " << step << " tensor " << t << ", placement "
            << describe(v.placement);
      }
    }
    const bool moved = fp32Got.sha256 != fp32Ref.sha256;
    fp32Moved += moved ? 1 : 0;
    if (rank == 0) {
      std::printf("N=%lld np=%d placement %-28s exact: %s  fp32: %s\n", (long long)job.workers,
                  processes, describe(v.placement).c_str(), got.sha256 == exactRef.sha256 ? "same bits" : "DIFFERENT",
                  moved ? "different bits" : "same bits");
    }
  }
  if (rank == 0) {
    std::printf("N=%lld np=%d: fp32 bits differed from the 1-process run in %d of %zu placements\n",
                (long long)job.workers, processes, fp32Moved, variants.size());
    std::ofstream(hashFile(processes, job.workers))
        << "exact " << firstPlacementSha << " replays " << exactRef.replays << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, ExactPlacement, ::testing::Values(4, 7));

}  // namespace
}  // namespace tl::reduce
