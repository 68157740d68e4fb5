#include "runtime/comm/mpi/mpi_ring_allreduce.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/comm/compact_int64.h"

namespace tl::comm::detail {

namespace {

int positiveModulo(int value, int modulus) { return ((value % modulus) + modulus) % modulus; }

// into[i] += from[i] for the integer types, in unsigned arithmetic (two's complement wraps, as
// MPI's sum does). ATen's add_ computes into + alpha * from, and its AVX2 int64 multiply is
// emulated one lane at a time: the int64 sum of a 1 MiB ring took 3x the float sum's time.
// Built for AVX2 too where the compiler can pick the build at run time.
#if defined(__x86_64__) && defined(__GNUC__)
#define TL_RING_ADD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TL_RING_ADD_CLONES
#endif
TL_RING_ADD_CLONES void addWrapping(std::uint64_t* into, const std::uint64_t* from,
                                    std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) into[i] += from[i];
}
TL_RING_ADD_CLONES void addWrapping(std::uint32_t* into, const std::uint32_t* from,
                                    std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) into[i] += from[i];
}
TL_RING_ADD_CLONES void addWrapping(std::uint8_t* into, const std::uint8_t* from,
                                    std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) into[i] = static_cast<std::uint8_t>(into[i] + from[i]);
}

// into += from, elementwise, for two contiguous tensors of one dtype and length.
void addInPlace(at::Tensor into, const at::Tensor& from) {
  const std::int64_t count = into.numel();
  switch (into.scalar_type()) {
    case at::kLong:
      addWrapping(static_cast<std::uint64_t*>(into.data_ptr()),
                  static_cast<const std::uint64_t*>(from.data_ptr()), count);
      return;
    case at::kInt:
      addWrapping(static_cast<std::uint32_t*>(into.data_ptr()),
                  static_cast<const std::uint32_t*>(from.data_ptr()), count);
      return;
    case at::kByte:
      addWrapping(static_cast<std::uint8_t*>(into.data_ptr()),
                  static_cast<const std::uint8_t*>(from.data_ptr()), count);
      return;
    default:  // floats: ATen's add, whose bits the ring has always had
      into.add_(from);
  }
}

}  // namespace

int ringTagLimit(MPI_Comm comm) {
  int* value = nullptr;
  int found = 0;
  TL_MPI_CHECK(MPI_Comm_get_attr(comm, MPI_TAG_UB, &value, &found));
  // MPI_TAG_UB: the largest tag, at least 32767 by the standard.
  return (found && value ? *value : 32767) + 1 - Communicator::kPointToPointTags;
}

RingEncoding ringEncodingFromEnvironment(RingEncoding configured) {
  const char* value = std::getenv("TL_RING_ENCODING");
  if (configured != RingEncoding::Auto || value == nullptr) return configured;
  const std::string v = value;
  if (v == "auto") return RingEncoding::Auto;
  if (v == "compact") return RingEncoding::Compact;
  if (v == "plain") return RingEncoding::Plain;
  throw InputError(str("TL_RING_ENCODING is '", v, "'; it takes auto, compact or plain"));
}

std::int64_t hostKey() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  TL_MPI_CHECK(MPI_Get_processor_name(name, &length));
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (int i = 0; i < length; ++i)
    hash = (hash ^ static_cast<unsigned char>(name[i])) * 1099511628211ull;
  return static_cast<std::int64_t>(hash >> 2);
}

bool ringReducesExactly(ReduceOp op, at::ScalarType type, int size) {
  if (op != ReduceOp::Sum) return false;
  return size == 2 || !at::isFloatingType(type);
}

bool ringMayReduce(ReduceOp op, at::ScalarType type, int size, bool anyFixedOrder) {
  return ringReducesExactly(op, type, size) || (anyFixedOrder && op == ReduceOp::Sum);
}

RingAllreduce::RingAllreduce(MPI_Comm comm, at::Tensor buffer, std::int64_t chunkElements,
                             int tagSlot, int tagSlots, at::Tensor scratch, RingPhases phases,
                             bool compact)
    : comm_(comm),
      buffer_(std::move(buffer)),
      type_(reductionDatatype(buffer_.scalar_type())),
      compact_(compact) {
  TL_CHECK(buffer_.device().is_cpu() && buffer_.is_contiguous(),
           "the ring allreduce works on a contiguous CPU tensor");
  TL_CHECK(!compact_ || buffer_.scalar_type() == at::kLong,
           "the compact ring encoding is for int64 buffers, not ", buffer_.scalar_type());
  TL_CHECK_GE(chunkElements, 1, "ring allreduce chunk size");
  TL_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  TL_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  TL_CHECK_GE(size_, 2, "a ring allreduce needs two members");
  steps_ = phases == RingPhases::ReduceScatterThenAllgather ? 2 * (size_ - 1) : size_ - 1;
  firstStep_ = phases == RingPhases::Allgather ? size_ - 1 : 0;
  segmentShift_ = phases == RingPhases::ReduceScatterThenAllgather ? 0 : -1;
  TL_CHECK(tagSlots >= 1 && tagSlot >= 0 && tagSlot < tagSlots, "ring allreduce tag slot");
  const int tagSpan = ringTagLimit(comm_) / tagSlots;
  TL_CHECK_GE(tagSpan, steps_, "MPI tags per ring allreduce (MPI_TAG_UB / concurrent rings)");
  tagBase_ = tagSlot * tagSpan;
  const std::int64_t longestSegment = segmentStart(1) - segmentStart(0);
  // Every message of a chunk's step has its own tag, so chunks may overtake each other; when
  // the tags would run out, fewer and larger chunks.
  const std::int64_t mostChunks = std::max<std::int64_t>(1, tagSpan / steps_ - 1);
  chunkElements_ = std::max(chunkElements, (longestSegment + mostChunks - 1) / mostChunks);
  const auto chunkCount = std::max<std::int64_t>(1, (longestSegment + chunkElements_ - 1) / chunkElements_);
  chunks_.resize(static_cast<size_t>(chunkCount));
  requests_.assign(2 * chunks_.size(), MPI_REQUEST_NULL);
  completed_.resize(requests_.size());
  slotBytes_ = compact::maxEncodedBytes(std::min(chunkElements_, longestSegment));
  TL_CHECK_LE(slotBytes_, std::numeric_limits<int>::max(), "compact ring chunk bytes");
  const std::int64_t scratchBytesNeeded =
      compact_ ? 2 * chunkCount * slotBytes_ : longestSegment * buffer_.element_size();
  // A compact ring whose chunks grew past chunkElements (tags ran out) may need more than
  // scratchBytes() promised: then space of its own.
  if (!scratch.defined() || (compact_ && scratch.numel() < scratchBytesNeeded))
    scratch = at::empty({scratchBytesNeeded}, at::kByte);
  TL_CHECK(scratch.scalar_type() == at::kByte && scratch.is_contiguous() &&
               scratch.device().is_cpu() && scratch.numel() >= scratchBytesNeeded,
           "ring allreduce scratch: ", scratch.numel(), " bytes for ", scratchBytesNeeded);
  scratchSpace_ = scratch;
  scratch_ = scratch.narrow(0, 0, scratchBytesNeeded);
  if (!compact_) scratch_ = scratch_.view(buffer_.scalar_type());
}

std::int64_t RingAllreduce::scratchBytes(const at::Tensor& buffer, int size,
                                         std::int64_t chunkElements, bool compact) {
  const std::int64_t longestSegment = (buffer.numel() + size - 1) / size;
  if (!compact) return longestSegment * buffer.element_size();
  // Two slots per chunk, for chunks of chunkElements (the constructor's size unless MPI's tags
  // run out).
  chunkElements = std::max<std::int64_t>(1, std::min(chunkElements, longestSegment));
  const std::int64_t chunks =
      std::max<std::int64_t>(1, (longestSegment + chunkElements - 1) / chunkElements);
  return 2 * chunks * compact::maxEncodedBytes(chunkElements);
}

std::uint8_t* RingAllreduce::receiveSlot(int chunk) const {
  return static_cast<std::uint8_t*>(scratch_.data_ptr()) + 2 * chunk * slotBytes_;
}

std::uint8_t* RingAllreduce::sendSlot(int chunk) const { return receiveSlot(chunk) + slotBytes_; }

at::Tensor RingAllreduce::releaseScratch() {
  TL_CHECK(done(), "the scratch space of a ring allreduce still in flight");
  return std::exchange(scratchSpace_, at::Tensor());
}

// Segments as even as can be; the first ones take the remainder, so segment 0 is the longest.
std::int64_t RingAllreduce::segmentStart(int segment) const {
  const std::int64_t n = buffer_.numel();
  return segment * (n / size_) + std::min<std::int64_t>(segment, n % size_);
}

std::int64_t RingAllreduce::chunkCount(int segment, int chunk) const {
  const std::int64_t length = segmentStart(segment + 1) - segmentStart(segment);
  return std::clamp<std::int64_t>(length - chunk * chunkElements_, 0, chunkElements_);
}

int RingAllreduce::tag(int step, int chunk) const {
  return tagBase_ + step * static_cast<int>(chunks_.size()) + chunk;
}

void RingAllreduce::start() {
  for (size_t c = 0; c < chunks_.size(); ++c) post(static_cast<int>(c));
}

// At step t a member sends segment (rank - t) to its right neighbour and receives segment
// (rank - t - 1) from its left one, which is the segment it sends at step t + 1. The first
// size-1 steps add what arrives (reduce-scatter); after them segment (rank + 1) is complete
// here, and the remaining steps pass the complete segments around (allgather).
// A half alone shifts the segments by one, so that member r ends (reduce-scatter) or starts
// (allgather) with segment r.
void RingAllreduce::post(int chunk) {
  const int localStep = chunks_[chunk].step;
  const int step = ringStep(localStep);
  const int right = (rank_ + 1) % size_;
  const int left = positiveModulo(rank_ - 1, size_);
  const int sendSegment = positiveModulo(rank_ - step + segmentShift_, size_);
  const int receiveSegment = positiveModulo(rank_ - step - 1 + segmentShift_, size_);
  const std::int64_t itemSize = buffer_.element_size();
  auto* base = static_cast<char*>(buffer_.data_ptr());
  const std::int64_t within = chunk * chunkElements_;
  if (compact_) {
    const std::int64_t* from =
        buffer_.data_ptr<std::int64_t>() + segmentStart(sendSegment) + within;
    const std::int64_t bytes =
        compact::encode(from, chunkCount(sendSegment, chunk), sendSlot(chunk));
    TL_MPI_CHECK(MPI_Irecv(receiveSlot(chunk), static_cast<int>(slotBytes_), MPI_BYTE, left,
                           tag(localStep, chunk), comm_, &requests_[2 * chunk]));
    TL_MPI_CHECK(MPI_Isend(sendSlot(chunk), static_cast<int>(bytes), MPI_BYTE, right,
                           tag(localStep, chunk), comm_, &requests_[2 * chunk + 1]));
    sentBytes_ += bytes;
    return;
  }
  const bool reducing = step < size_ - 1;
  char* into = reducing ? static_cast<char*>(scratch_.data_ptr()) + within * itemSize
                        : base + (segmentStart(receiveSegment) + within) * itemSize;
  TL_MPI_CHECK(MPI_Irecv(into, static_cast<int>(chunkCount(receiveSegment, chunk)), type_, left,
                         tag(localStep, chunk), comm_, &requests_[2 * chunk]));
  TL_MPI_CHECK(MPI_Isend(base + (segmentStart(sendSegment) + within) * itemSize,
                         static_cast<int>(chunkCount(sendSegment, chunk)), type_, right,
                         tag(localStep, chunk), comm_, &requests_[2 * chunk + 1]));
  sentBytes_ += chunkCount(sendSegment, chunk) * itemSize;
}

// Both messages of the chunk's step are done: reduce what arrived, then take the next step.
// Sending and receiving in the same step never touch the same memory, and a step's receive
// into the buffer comes after the send that read that segment (an earlier step) completed.
void RingAllreduce::advance(int chunk) {
  Chunk& state = chunks_[chunk];
  const bool reducing = ringStep(state.step) < size_ - 1;
  const int segment = positiveModulo(rank_ - ringStep(state.step) - 1 + segmentShift_, size_);
  const std::int64_t count = chunkCount(segment, chunk);
  const std::int64_t within = chunk * chunkElements_;
  if (compact_) {
    // The left neighbour's encoding of this step's segment: added in while reducing, stored
    // while gathering.
    compact::decode(receiveSlot(chunk), slotBytes_, count,
                    buffer_.data_ptr<std::int64_t>() + segmentStart(segment) + within,
                    reducing ? compact::Decode::Add : compact::Decode::Store);
  } else if (reducing && count > 0) {
    addInPlace(buffer_.narrow(0, segmentStart(segment) + within, count),
               scratch_.narrow(0, within, count));
  }
  if (++state.step == steps_) {
    ++finished_;
    return;
  }
  post(chunk);
}

bool RingAllreduce::progress() {
  if (finished_ == static_cast<int>(chunks_.size())) return true;
  int count = 0;
  TL_MPI_CHECK(MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count,
                            completed_.data(), MPI_STATUSES_IGNORE));
  if (count == MPI_UNDEFINED) count = 0;
  // A chunk moves on once both of its requests are done (MPI_Testsome sets them to
  // MPI_REQUEST_NULL), whether in this call or an earlier one; each chunk once per call.
  std::vector<int> touched;
  for (int i = 0; i < count; ++i) touched.push_back(completed_[i] / 2);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (int chunk : touched) {
    if (requests_[2 * chunk] == MPI_REQUEST_NULL && requests_[2 * chunk + 1] == MPI_REQUEST_NULL)
      advance(chunk);
  }
  return finished_ == static_cast<int>(chunks_.size());
}

}  // namespace tl::comm::detail
