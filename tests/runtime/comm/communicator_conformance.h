// One conformance suite for the Communicator interface, instantiated per backend
// (conformance_backends.cpp). Every rank of an mpirun job runs it; ranks check exact results.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <ATen/ATen.h>

#include "runtime/comm/communicator.h"

namespace tl::comm::testing {

struct BackendUnderTest {
  std::string name;   // as backend() reports it
  std::string label;  // the instance's name in test names [default: name]
  // Empty when the backend can run here; otherwise why its tests are skipped.
  std::function<std::string()> whyUnavailable;
  // Collective over the whole test job.
  std::function<std::unique_ptr<Communicator>()> create;
  // Where this backend's tensors live; and a tensor it must refuse for its device.
  std::function<at::Device()> device;
  std::function<at::Tensor()> wrongDeviceTensor;
};

class CommunicatorConformance : public ::testing::TestWithParam<BackendUnderTest> {
 protected:
  void SetUp() override {
    const std::string why = GetParam().whyUnavailable();
    if (!why.empty()) GTEST_SKIP() << GetParam().name << " backend unavailable: " << why;
    comm = GetParam().create();
  }

  at::Tensor onDevice(const at::Tensor& cpu) const { return cpu.to(GetParam().device()); }

  // Short enough that ranks which fall out of step fail the test instead of hanging it.
  static CollectiveOptions patient() { return {std::chrono::seconds(60)}; }

  std::unique_ptr<Communicator> comm;
};

// Rank-dependent values, negative ones too for signed types, exact in every dtype tested
// (sums over up to 8 ranks stay within uint8).
inline at::Tensor contribution(int rank, at::ScalarType type, std::int64_t count) {
  const at::Tensor i = at::arange(count, at::kLong);
  if (type == at::kByte) return ((i % 5 + 1) * (rank + 1) + i % 3).to(type);
  if (type == at::kBool) return ((i + rank) % 2 == 0);
  at::Tensor values = ((i % 5 - 2) * (rank + 1) + (i % 3) * rank).to(type);
  if (at::isFloatingType(type)) values += 0.25 * rank;
  return values;
}

inline const at::ScalarType kReducibleTypes[] = {at::kFloat, at::kDouble, at::kInt, at::kLong,
                                                 at::kByte};

// What reducing every rank's contribution() gives.
inline at::Tensor expectedReduction(ReduceOp op, int size, at::ScalarType type,
                                    std::int64_t count) {
  std::vector<at::Tensor> all;
  for (int r = 0; r < size; ++r) all.push_back(contribution(r, type, count));
  const at::Tensor stacked = at::stack(all);
  switch (op) {
    case ReduceOp::Sum:
      return stacked.sum(0).to(type);
    case ReduceOp::Max:
      return std::get<0>(stacked.max(0));
    case ReduceOp::Min:
      return std::get<0>(stacked.min(0));
  }
  return {};
}

// Element counts for the segmented collectives: empty, fewer elements than members, segments
// of unequal length, and a ring of several chunks per segment.
inline const std::int64_t kSegmentedCounts[] = {0, 1, 2, 5, 37, 300001};

// int64 values whose sum float64 could not hold exactly (near 2^60, and odd).
inline at::Tensor largeIntegers(int rank, std::int64_t count) {
  return at::arange(count, at::kLong) * 3 + (std::int64_t(1) << 60) + 2 * rank + 1;
}

// `whole` with only member `rank`'s segment kept and the rest overwritten, as a member of a
// segment allgather holds it before the collective.
inline at::Tensor onlySegment(const at::Tensor& whole, int size, int rank) {
  const Segment mine = segmentOf(whole.numel(), size, rank);
  at::Tensor held = at::full_like(whole, 7);
  held.narrow(0, mine.offset, mine.length).copy_(whole.narrow(0, mine.offset, mine.length));
  return held;
}

inline std::string describe(const at::Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace tl::comm::testing
