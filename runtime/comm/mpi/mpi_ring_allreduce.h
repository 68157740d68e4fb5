// The MPI backend's allreduce for large buffers whose result does not depend on the order of
// the reduction: a ring (reduce-scatter, then allgather) over point-to-point messages.
//
// Why not MPI_Iallreduce: Open MPI 4.1's nonblocking allreduce (libnbc) reduces an in-place
// buffer on a binomial tree, which moves every byte twice in sequence and took ~2x as long as a
// blocking MPI_Allreduce of the same buffer. The ring moves 2(p-1)/p of the buffer per member,
// and each chunk travels the ring on its own, so adding one chunk overlaps moving the others.
//
// When the order does not matter: sums of integers are exact in any order (two's complement
// wraps alike), and with two members a float sum is one addition, which IEEE makes commutative.
// A float sum over three or more members keeps MPI_Iallreduce, so its bits stay what they were.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/mpi/mpi_detail.h"

namespace tl::comm::detail {

// Which part of the ring a RingAllreduce runs. The two halves alone are the communicator's
// reduce-scatter and segment allgather: there member r owns segment r (segmentOf in
// communicator.h, the ring's own layout), while the whole ring leaves segment r + 1 complete
// on member r between its halves.
enum class RingPhases { ReduceScatterThenAllgather, ReduceScatter, Allgather };

// True when the ring gives exactly the bits any other order would: integer sums, or float sums
// over two members.
bool ringReducesExactly(ReduceOp op, at::ScalarType type, int size);

// Whether an allreduce may take the ring: where it reduces exactly, or for any sum whose caller
// accepts any fixed order of the additions (CollectiveOptions::anyFixedOrder).
bool ringMayReduce(ReduceOp op, at::ScalarType type, int size, bool anyFixedOrder);

// What `configured` means in this process: Auto becomes TL_RING_ENCODING's value where that is
// set (tl::InputError for a value other than auto, compact, plain).
RingEncoding ringEncodingFromEnvironment(RingEncoding configured);

// A key of this process's host: a hash of MPI_Get_processor_name, in [0, 2^62).
std::int64_t hostKey();

// One ring allreduce (Sum) in place on a contiguous CPU tensor. Members construct it with the
// same arguments, call start() in the same collective order, then progress() until it returns
// true. Used from the MPI thread only, like the communicator that owns it.
class RingAllreduce {
 public:
  // chunkElements: the most elements one message carries (the pipeline's grain). Rings in flight
  // together on one communicator (overlapped buckets) must not share tags: the tag space is cut
  // into tagSlots ranges and this ring uses range tagSlot (members pass the same slot).
  // scratch: uint8 space of at least scratchBytes() for the ring to receive into (the
  // communicator recycles it across rings: touching fresh pages cost more than a small ring's
  // transfer on a loaded machine); undefined: the ring allocates its own.
  // phases: the whole allreduce, or one of its halves (RingPhases).
  // compact: an int64 buffer's chunks travel in the compact encoding (runtime/comm/
  // compact_int64.h): each send encodes its chunk into a send slot and each receive lands in a
  // receive slot, decoded when it completes; members pass the same value.
  RingAllreduce(MPI_Comm comm, at::Tensor buffer, std::int64_t chunkElements, int tagSlot = 0,
                int tagSlots = 1, at::Tensor scratch = {},
                RingPhases phases = RingPhases::ReduceScatterThenAllgather, bool compact = false);
  RingAllreduce(const RingAllreduce&) = delete;
  RingAllreduce& operator=(const RingAllreduce&) = delete;

  void start();
  // Moves every chunk as far as its messages allow; true once the whole buffer is reduced.
  // tl::Error when MPI fails.
  bool progress();
  // What MPI may still write into should the collective be abandoned (the scratch space).
  at::Tensor scratch() const { return scratch_; }
  // The scratch space a ring over `size` members needs for `buffer`, in bytes (at most: a
  // compact ring's slots depend on its chunk size, at least chunkElements).
  static std::int64_t scratchBytes(const at::Tensor& buffer, int size,
                                   std::int64_t chunkElements = 1, bool compact = false);
  // Once done(): the scratch space, for another ring to use; undefined after the first call.
  at::Tensor releaseScratch();
  bool done() const { return finished_ == static_cast<int>(chunks_.size()); }
  // Bytes this member's sends have carried so far.
  std::int64_t sentBytes() const { return sentBytes_; }

 private:
  struct Chunk {
    int step = 0;  // 0 .. steps_; for the whole ring reduce-scatter steps first, then allgather
  };
  // Step `step` of this ring as a step of the whole ring (0 .. 2(size-1)): an allgather alone
  // starts at the whole ring's step size-1.
  int ringStep(int step) const { return step + firstStep_; }
  void post(int chunk);
  void advance(int chunk);
  std::int64_t segmentStart(int segment) const;
  std::int64_t chunkCount(int segment, int chunk) const;
  int tag(int step, int chunk) const;
  // A compact ring's slots of one chunk: where its encoded receive lands and its send is encoded.
  std::uint8_t* receiveSlot(int chunk) const;
  std::uint8_t* sendSlot(int chunk) const;

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  at::Tensor buffer_;
  // Plain: one segment, each chunk's slot receives the left neighbour's part. Compact: bytes,
  // a receive slot then a send slot per chunk, slotBytes_ each.
  at::Tensor scratch_;
  at::Tensor scratchSpace_;  // the uint8 space scratch_ views, until released
  MPI_Datatype type_;
  bool compact_ = false;
  std::int64_t slotBytes_ = 0;
  std::int64_t chunkElements_;
  int steps_ = 0;
  int firstStep_ = 0;
  int segmentShift_ = 0;  // -1 for a half alone: member r then owns segment r
  int tagBase_ = 0;
  std::vector<Chunk> chunks_;
  std::vector<MPI_Request> requests_;  // chunk c: [2c] its receive, [2c + 1] its send
  std::vector<int> completed_;
  int finished_ = 0;
  std::int64_t sentBytes_ = 0;
};

}  // namespace tl::comm::detail
