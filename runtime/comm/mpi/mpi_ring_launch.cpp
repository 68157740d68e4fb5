// MpiCommunicator's rings (mpi_ring_allreduce.h): a half of the ring alone, a ring started in
// its tag slot, and whether an int64 sum travels compact.
#include <algorithm>
#include <memory>

#include <ATen/ATen.h>

#include "runtime/comm/mpi/mpi_communicator_class.h"

namespace tl::comm::detail {

// A reduce-scatter or segment allgather: a half of the ring. A CUDA tensor is staged through
// host memory around a blocking one; a single member or an empty tensor has nothing to move.
std::unique_ptr<PendingCollective> MpiCommunicator::startHalfRing(const char* operation, RingPhases phases,
                                                                  at::Tensor& tensor,
                                                                  const CollectiveOptions& options) {
  enter(operation);
  checkMpiTensor(tensor, operation, /*mustBeContiguous=*/true);
  (void)reductionDatatype(tensor.scalar_type());  // tl::Error for other dtypes
  const auto description = [&] { return str(operation, "(", describeTensor(tensor), ")"); };
  const auto completed = [&] { return pending(Started{}, operation, "", /*done=*/true); };
  if (size_ == 1 || tensor.numel() == 0) return completed();
  const bool compact = compactRing(tensor, options);
  if (tensor.is_cuda()) {
    at::Tensor host = tensor.cpu();
    Started started = beginRing(host.view({-1}), phases, operation, options, compact);
    finish(started, description);
    tensor.copy_(host);
    return completed();
  }
  Started started = beginRing(tensor.view({-1}), phases, operation, options, compact);
  return pending(std::move(started), operation, description());
}

// Starts a ring over `tensor` (mpi_ring_allreduce.h). Rings in flight together (overlapped
// buckets) each use their own range of tags.
MpiCommunicator::Started MpiCommunicator::beginRing(at::Tensor tensor, RingPhases phases, const char* operation,
                                                    const CollectiveOptions& options, bool compact) {
  return beginPolled({tensor}, options, [&](std::vector<at::Tensor>& buffers) {
    const std::int64_t chunk = std::clamp<std::int64_t>(
        options_.ringChunkBytes / tensor.element_size(), 1, options_.maxCountPerCall);
    const int slot = static_cast<int>(ringsStarted_++ % kRingTagSlots);
    std::weak_ptr<RingAllreduce>& previous = ringInSlot_[slot];
    if (auto live = previous.lock(); live && !live->done()) {
      // The ring kRingTagSlots collectives back still uses these tags: finish it first.
      if (!pollUntil([&] { progressRings(); return live->done(); }, deadlineAfter(timeoutFor(options))))
        throw TimeoutError(str("mpi ", operation, ": the ring ", kRingTagSlots,
                               " collectives back did not finish in time to free its tags"));
    }
    auto ring = std::make_shared<RingAllreduce>(
        comm_, tensor, chunk, slot, kRingTagSlots,
        scratch_.take(RingAllreduce::scratchBytes(tensor, size_, chunk, compact)), phases, compact);
    previous = ring;
    buffers.push_back(ring->scratch());
    ring->start();
    return [this, ring] { return progressRing(*ring); };
  });
}

// Whether this collective's int64 sums travel compact (MpiCommunicatorOptions::ringEncoding).
// Members call it at the same point of the same collective: Auto's first answer is itself a
// collective.
bool MpiCommunicator::compactRing(const at::Tensor& tensor, const CollectiveOptions& options) {
  if (!options.compactIntegers || tensor.scalar_type() != at::kLong) return false;
  if (options_.ringEncoding != RingEncoding::Auto) return options_.ringEncoding == RingEncoding::Compact;
  if (!spansHosts_) {
    const std::int64_t key = hostKey();
    at::Tensor keys = at::tensor({key, -key}, at::kLong);  // min key, -(max key)
    CollectiveOptions plain = options;
    plain.compactIntegers = false;
    allreduceHost(keys, ReduceOp::Min, plain, keys);
    spansHosts_ = keys[0].item<std::int64_t>() != -keys[1].item<std::int64_t>();
  }
  return *spansHosts_;
}

}  // namespace tl::comm::detail
