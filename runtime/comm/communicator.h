// Communicator: the collectives tl needs, behind one small interface with an MPI and an NCCL
// backend, and an in-memory one whose ranks are threads (for tests). Backends are created
// through their factories only (mpi/mpi_communicator.h, nccl/nccl_communicator.h,
// inmemory/inmemory_communicator.h); callers hold a Communicator.
//
// Threading: a communicator is used from one thread (the training thread); every collective is
// called by all members in the same order. Errors are sticky: after a failure every later call
// throws the same error.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>

namespace tl::comm {

enum class ReduceOp { Sum, Max, Min };

// The deadline of collectives unless the job sets another (tl-launch --collective-timeout).
inline constexpr std::chrono::milliseconds kDefaultCollectiveTimeout = std::chrono::minutes(10);

struct CollectiveOptions {
  // A collective that has not completed by then throws tl::TimeoutError. Unset: the
  // communicator's own deadline, Communicator::timeout().
  std::optional<std::chrono::milliseconds> timeout;
  // Allreduce Sum of floats: the caller accepts any order of the additions that is the same on
  // every member and in every run (e.g. the fp32 gradient reduction, which promises no bits
  // across placements). The MPI backend then takes its ring for float sums over three or more
  // members too, instead of MPI_Iallreduce; other backends and dtypes ignore it.
  bool anyFixedOrder = false;
  // Sum of int64 (allreduce, reduce-scatter): the backend may move the values in a lossless
  // compact encoding (runtime/comm/compact_int64.h), which costs a pass over them and pays where
  // bytes are dear: the MPI ring between hosts (MpiCommunicatorOptions::ringEncoding). Same
  // result; other dtypes and backends ignore it. Members pass the same value.
  bool compactIntegers = false;
};

// A collective started by Communicator::startAllreduce and not waited for yet. Used on the
// communicator's thread only, and must not outlive its communicator. Destroyed unfinished, it
// fails the communicator (sticky, as a timeout does): its members are out of step from then on.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Lets the transport move the collective forward without blocking; true once it is complete.
  virtual bool test() = 0;
  // Returns when it is complete; throws what the blocking collective would (the deadline counts
  // from the start). Calling it again returns at once.
  virtual void wait() = 0;
};

// The part of a flat buffer of `numel` elements that member `rank` of `size` owns in a
// reduce-scatter or a segment allgather: segments in rank order, as even as can be, the first
// numel % size of them one element longer (some are empty when numel < size).
struct Segment {
  std::int64_t offset = 0;
  std::int64_t length = 0;
};
Segment segmentOf(std::int64_t numel, int size, int rank);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "mpi", "nccl", "inmemory"

  // In place on a contiguous tensor. Sum/Max/Min for float32, float64, int32, int64, uint8.
  virtual void allreduce(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options = {}) = 0;
  // The same allreduce, started now and finished by the returned handle's wait(), so that the
  // caller computes meanwhile (a gradient bucket's reduction during backward). The tensor must
  // stay untouched until then. It is one collective in the members' common order, counted when
  // started. The default completes it before returning (a backend without an asynchronous path).
  virtual std::unique_ptr<PendingCollective> startAllreduce(at::Tensor& tensor, ReduceOp op,
                                                            const CollectiveOptions& options = {});
  // Sum reduce-scatter, in place on a contiguous tensor taken as flat: once complete, this
  // member's segmentOf(numel, size(), rank()) holds the sum over members of that segment; the
  // rest of the tensor is unspecified (scratch). Dtypes as allreduce; integer sums are exact
  // (wrapping like two's complement), float sums take the backend's order. Half the bytes of
  // an allreduce: the exact reducer's first half (runtime/reduce/exact_reducer.cpp). Started as
  // startAllreduce is. The default is an allreduce (every segment then holds its sum).
  virtual std::unique_ptr<PendingCollective> startReduceScatter(at::Tensor& tensor,
                                                                const CollectiveOptions& options = {});
  // In place on a contiguous tensor taken as flat: each member gives its segmentOf(numel,
  // size(), rank()); once complete, every member's tensor holds every member's segment. Dtypes
  // as allreduce. Started as startAllreduce is. The default pads the segments to one length
  // and goes through allgather().
  virtual std::unique_ptr<PendingCollective> startAllgatherSegments(
      at::Tensor& tensor, const CollectiveOptions& options = {});
  // The blocking forms of the two above.
  void reduceScatter(at::Tensor& tensor, const CollectiveOptions& options = {});
  void allgatherSegments(at::Tensor& tensor, const CollectiveOptions& options = {});
  virtual void broadcast(at::Tensor& tensor, int root, const CollectiveOptions& options = {}) = 0;
  // Returns a tensor of shape [size(), *tensor.shape] holding every member's tensor.
  virtual at::Tensor allgather(const at::Tensor& tensor, const CollectiveOptions& options = {}) = 0;
  virtual void barrier(const CollectiveOptions& options = {}) = 0;
  // Collective over all members: those passing the same color >= 0 form a new communicator,
  // ranked by key (ties by old rank). A member passing color < 0 gets nullptr.
  virtual std::unique_ptr<Communicator> split(int color, int key,
                                              const CollectiveOptions& options = {}) = 0;

  // Point-to-point, outside the collectives' common order (issue 43: the replica sent to joining
  // members from several senders at once). startSend sends the bytes of a contiguous CPU tensor
  // to member `peer`, which takes them with startReceive(from this member, the same tag) into a
  // contiguous CPU tensor of as many bytes (any dtype: bytes travel). Messages from one member
  // to another under one tag arrive in the order they were started. Both start now and complete
  // through the handle; until then the tensor must stay untouched. A handle's deadline (the
  // options', else timeout()) counts from its start; a timeout or an error fails the
  // communicator, as a collective's does. Tags: 0 <= tag < kPointToPointTags. Backends without
  // it (pointToPoint() false: NCCL) throw tl::Error; callers then take a collective path.
  static constexpr int kPointToPointTags = 1024;
  virtual bool pointToPoint() const { return false; }
  virtual std::unique_ptr<PendingCollective> startSend(const at::Tensor& tensor, int peer, int tag,
                                                       const CollectiveOptions& options = {});
  virtual std::unique_ptr<PendingCollective> startReceive(at::Tensor& tensor, int peer, int tag,
                                                          const CollectiveOptions& options = {});

  // The deadline of every collective whose options give none (kDefaultCollectiveTimeout unless
  // set). Communicators split from this one, or set up over it, start with it. Local: members
  // may differ, but a job sets the same on all of them.
  std::chrono::milliseconds timeout() const { return timeout_; }
  void setTimeout(std::chrono::milliseconds timeout);  // tl::Error unless positive

 protected:
  std::chrono::milliseconds timeoutFor(const CollectiveOptions& options) const {
    return options.timeout.value_or(timeout_);
  }

 private:
  std::chrono::milliseconds timeout_ = kDefaultCollectiveTimeout;
};

const char* toString(ReduceOp op);

}  // namespace tl::comm
