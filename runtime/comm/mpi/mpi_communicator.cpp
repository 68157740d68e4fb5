// MpiCommunicator: Communicator over an MPI communicator, with deadlines and sticky failure.
#include "runtime/comm/mpi/mpi_communicator.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/comm/collective_timeout.h"
#include "runtime/comm/collective_wait.h"
#include "runtime/comm/mpi/mpi_detail.h"
#include "runtime/comm/mpi/mpi_ring_allreduce.h"
#include "runtime/comm/mpi/mpi_roll_call.h"
#include "runtime/comm/mpi/scratch_pool.h"

namespace tl::comm {

namespace {

using detail::checkOnMpiThread;
using detail::describeTensor;

// Calls chunk(offset, count) for consecutive pieces of [0, total) of at most maxCount each.
void forEachChunk(std::int64_t total, std::int64_t maxCount,
                  const std::function<void(std::int64_t, int)>& chunk) {
  for (std::int64_t offset = 0; offset < total; offset += maxCount)
    chunk(offset, static_cast<int>(std::min(maxCount, total - offset)));
}

// CPU tensors travel as they are; CUDA tensors are staged through host memory (this MPI need not
// be CUDA-aware), which lets several processes share one GPU where NCCL would refuse them.
void checkMpiTensor(const at::Tensor& tensor, const char* operation, bool mustBeContiguous) {
  TL_CHECK(tensor.defined(), "mpi ", operation, " got an undefined tensor");
  TL_CHECK(tensor.device().is_cpu() || tensor.device().is_cuda(), "mpi ", operation,
           " needs a CPU or CUDA tensor, got ", describeTensor(tensor));
  TL_CHECK(!mustBeContiguous || tensor.is_contiguous(), "mpi ", operation,
           " works in place on a contiguous tensor, got a non-contiguous one (",
           describeTensor(tensor), ")");
}

void checkOptions(const MpiCommunicatorOptions& options) {
  TL_CHECK_GE(options.maxCountPerCall, 1, "MpiCommunicatorOptions::maxCountPerCall");
  TL_CHECK_LE(options.maxCountPerCall, std::numeric_limits<int>::max(),
              "MpiCommunicatorOptions::maxCountPerCall must fit MPI's int counts");
  TL_CHECK_GE(options.ringMinBytes, 0, "MpiCommunicatorOptions::ringMinBytes");
  TL_CHECK_GE(options.ringChunkBytes, 1, "MpiCommunicatorOptions::ringChunkBytes");
}

// Threading: used from the MpiSession's thread only (checked on entry to every collective).
// Members call collectives in the same order; each call starts nonblocking MPI operations and
// waits for them under its deadline.
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, MpiCommunicatorOptions options)
      : comm_(comm), options_(options), epoch_(collectivesEpoch()) {
    // Errors come back as codes, become tl::Error, and fail this communicator only.
    TL_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    TL_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    TL_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    options_.ringEncoding = detail::ringEncodingFromEnvironment(options_.ringEncoding);
    rollCall_ = std::make_unique<detail::MpiRollCall>(comm_);
  }

  ~MpiCommunicator() override {
    rollCall_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    // Freeing is fine with abandoned operations pending: MPI frees the communicator once they
    // are done, or at MPI_Finalize.
    if (!finalized) MPI_Comm_free(&comm_);
  }

  MPI_Comm handle() const { return comm_; }
  const MpiCommunicatorOptions& options() const { return options_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void allreduce(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options) override {
    enter("allreduce");
    checkMpiTensor(tensor, "allreduce", /*mustBeContiguous=*/true);
    if (!tensor.is_cuda()) return allreduceHost(tensor, op, options, tensor);
    at::Tensor host = tensor.cpu();
    allreduceHost(host, op, options, tensor);
    tensor.copy_(host);
  }

  std::unique_ptr<PendingCollective> startAllreduce(at::Tensor& tensor, ReduceOp op,
                                                    const CollectiveOptions& options) override {
    // A CUDA tensor is staged through host memory around the collective: blocking.
    if (tensor.is_cuda()) return Communicator::startAllreduce(tensor, op, options);
    enter("allreduce");
    checkMpiTensor(tensor, "allreduce", /*mustBeContiguous=*/true);
    Started started = beginAllreduce(tensor, op, options);
    return std::make_unique<Pending>(*this, std::move(started), "allreduce",
                                     str("allreduce(", toString(op), ", ", describeTensor(tensor), ")"));
  }

  // Either half of the ring alone (mpi_ring_allreduce.h): whatever the size, since that is what
  // saves the bytes, and an integer sum's bits do not depend on the order.
  std::unique_ptr<PendingCollective> startReduceScatter(at::Tensor& tensor,
                                                        const CollectiveOptions& options) override {
    return startHalfRing("reduceScatter", detail::RingPhases::ReduceScatter, tensor, options);
  }

  std::unique_ptr<PendingCollective> startAllgatherSegments(
      at::Tensor& tensor, const CollectiveOptions& options) override {
    return startHalfRing("allgatherSegments", detail::RingPhases::Allgather, tensor, options);
  }

  // Bytes, not typed elements: broadcast copies, so every dtype works.
  void broadcast(at::Tensor& tensor, int root, const CollectiveOptions& options) override {
    enter("broadcast");
    checkMpiTensor(tensor, "broadcast", /*mustBeContiguous=*/true);
    TL_CHECK(root >= 0 && root < size_, "mpi broadcast from root ", root,
             " on a communicator of size ", size_);
    if (!tensor.is_cuda()) return broadcastHost(tensor, root, options, tensor);
    at::Tensor host = tensor.cpu();
    broadcastHost(host, root, options, tensor);
    tensor.copy_(host);
  }

  at::Tensor allgather(const at::Tensor& tensor, const CollectiveOptions& options) override {
    enter("allgather");
    checkMpiTensor(tensor, "allgather", /*mustBeContiguous=*/false);
    if (!tensor.is_cuda()) return allgatherHost(tensor.contiguous(), options, tensor);
    return allgatherHost(tensor.cpu().contiguous(), options, tensor).to(tensor.device());
  }

  void barrier(const CollectiveOptions& options) override {
    enter("barrier");
    run([] { return std::string("barrier"); }, {}, options,
        [&](std::vector<MPI_Request>& requests) {
          requests.push_back(MPI_REQUEST_NULL);
          TL_MPI_CHECK(MPI_Ibarrier(comm_, &requests.back()));
        });
  }

  std::unique_ptr<Communicator> split(int color, int key,
                                      const CollectiveOptions& options) override {
    enter("split");
    // MPI has no nonblocking split. Waiting for every member under the deadline first means the
    // blocking MPI_Comm_split can then only hang on a member that died in between, and a dead
    // member ends the whole job under mpirun anyway.
    barrier(options);
    MPI_Comm child = MPI_COMM_NULL;
    try {
      TL_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &child));
    } catch (...) {
      failure_ = std::current_exception();
      throw;
    }
    if (child == MPI_COMM_NULL) return nullptr;
    auto communicator = std::make_unique<MpiCommunicator>(child, options_);
    communicator->setTimeout(timeout());
    return communicator;
  }

 private:
  // A collective whose operations have started: what MPI still writes into, and its deadline.
  struct Started {
    std::function<bool()> poll;  // moves the operations on; true once all are complete
    std::vector<at::Tensor> buffers;
    std::chrono::milliseconds timeout{};
    detail::Clock::time_point deadline;
  };

  // The collectives on host memory; errors name `shown`, the caller's tensor.
  void allreduceHost(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options,
                     const at::Tensor& shown) {
    Started started = beginAllreduce(tensor, op, options);
    finish(started, [&] { return str("allreduce(", toString(op), ", ", describeTensor(shown), ")"); });
  }

  // A reduce-scatter or segment allgather: a half of the ring. A CUDA tensor is staged through
  // host memory around a blocking one; a single member or an empty tensor has nothing to move.
  std::unique_ptr<PendingCollective> startHalfRing(const char* operation, detail::RingPhases phases,
                                                   at::Tensor& tensor,
                                                   const CollectiveOptions& options) {
    enter(operation);
    checkMpiTensor(tensor, operation, /*mustBeContiguous=*/true);
    (void)detail::reductionDatatype(tensor.scalar_type());  // tl::Error for other dtypes
    const auto description = [&] { return str(operation, "(", describeTensor(tensor), ")"); };
    const auto completed = [&] {
      return std::make_unique<Pending>(*this, Started{}, operation, "", /*done=*/true);
    };
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
    return std::make_unique<Pending>(*this, std::move(started), operation, description());
  }

  // Starts a ring over `tensor` (mpi_ring_allreduce.h). Rings in flight together (overlapped
  // buckets) each use their own range of tags.
  Started beginRing(at::Tensor tensor, detail::RingPhases phases, const char* operation,
                    const CollectiveOptions& options, bool compact) {
    return beginPolled({tensor}, options, [&](std::vector<at::Tensor>& buffers) {
      const std::int64_t chunk = std::clamp<std::int64_t>(
          options_.ringChunkBytes / tensor.element_size(), 1, options_.maxCountPerCall);
      const int slot = static_cast<int>(ringsStarted_++ % kRingTagSlots);
      std::weak_ptr<detail::RingAllreduce>& previous = ringInSlot_[slot];
      if (auto live = previous.lock(); live && !live->done()) {
        // The ring kRingTagSlots collectives back still uses these tags: finish it first.
        if (!detail::pollUntil([&] { progressRings(); return live->done(); },
                               detail::deadlineAfter(timeoutFor(options))))
          throw TimeoutError(str("mpi ", operation, ": the ring ", kRingTagSlots,
                                 " collectives back did not finish in time to free its tags"));
      }
      auto ring = std::make_shared<detail::RingAllreduce>(
          comm_, tensor, chunk, slot, kRingTagSlots,
          scratch_.take(detail::RingAllreduce::scratchBytes(tensor, size_, chunk, compact)), phases,
          compact);
      previous = ring;
      buffers.push_back(ring->scratch());
      ring->start();
      return [this, ring] { return progressRing(*ring); };
    });
  }

  // Whether this collective's int64 sums travel compact (MpiCommunicatorOptions::ringEncoding).
  // Members call it at the same point of the same collective: Auto's first answer is itself a
  // collective.
  bool compactRing(const at::Tensor& tensor, const CollectiveOptions& options) {
    if (!options.compactIntegers || tensor.scalar_type() != at::kLong) return false;
    if (options_.ringEncoding != RingEncoding::Auto)
      return options_.ringEncoding == RingEncoding::Compact;
    if (!spansHosts_) {
      const std::int64_t key = detail::hostKey();
      at::Tensor keys = at::tensor({key, -key}, at::kLong);  // min key, -(max key)
      CollectiveOptions plain = options;
      plain.compactIntegers = false;
      allreduceHost(keys, ReduceOp::Min, plain, keys);
      spansHosts_ = keys[0].item<std::int64_t>() != -keys[1].item<std::int64_t>();
    }
    return *spansHosts_;
  }

  // Large sums the ring may take (ringMayReduce) go around a ring of point-to-point messages
  // (mpi_ring_allreduce.h); the rest through MPI_Iallreduce in chunks.
  Started beginAllreduce(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options) {
    const std::int64_t itemSize = tensor.element_size();
    if (size_ > 1 && std::int64_t(tensor.nbytes()) >= options_.ringMinBytes &&
        detail::ringMayReduce(op, tensor.scalar_type(), size_, options.anyFixedOrder)) {
      return beginRing(tensor, detail::RingPhases::ReduceScatterThenAllgather, "allreduce", options,
                       compactRing(tensor, options));
    }
    const MPI_Datatype type = detail::reductionDatatype(tensor.scalar_type());
    const MPI_Op mpiOp = detail::reductionOperation(op);
    auto* base = static_cast<char*>(tensor.data_ptr());
    return begin({tensor}, options, [&](std::vector<MPI_Request>& requests) {
      forEachChunk(tensor.numel(), options_.maxCountPerCall, [&](std::int64_t offset, int count) {
        requests.push_back(MPI_REQUEST_NULL);
        TL_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, base + offset * itemSize, count, type, mpiOp,
                                    comm_, &requests.back()));
      });
    });
  }

  void broadcastHost(at::Tensor& tensor, int root, const CollectiveOptions& options,
                     const at::Tensor& shown) {
    auto* base = static_cast<char*>(tensor.data_ptr());
    run([&] { return str("broadcast(root ", root, ", ", describeTensor(shown), ")"); }, {tensor},
        options, [&](std::vector<MPI_Request>& requests) {
          forEachChunk(tensor.nbytes(), options_.maxCountPerCall, [&](std::int64_t offset, int count) {
            requests.push_back(MPI_REQUEST_NULL);
            TL_MPI_CHECK(MPI_Ibcast(base + offset, count, MPI_BYTE, root, comm_, &requests.back()));
          });
        });
  }

  at::Tensor allgatherHost(const at::Tensor& input, const CollectiveOptions& options,
                           const at::Tensor& shown) {
    std::vector<std::int64_t> shape{size_};
    shape.insert(shape.end(), input.sizes().begin(), input.sizes().end());
    at::Tensor output = at::empty(shape, input.options());
    const std::int64_t bytes = input.nbytes();
    const auto* in = static_cast<const char*>(input.data_ptr());
    auto* out = static_cast<char*>(output.data_ptr());
    run([&] { return str("allgather(", describeTensor(shown), ")"); }, {input, output}, options,
        [&](std::vector<MPI_Request>& requests) {
          if (bytes <= options_.maxCountPerCall) {
            requests.push_back(MPI_REQUEST_NULL);
            TL_MPI_CHECK(MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out,
                                        static_cast<int>(bytes), MPI_BYTE, comm_, &requests.back()));
            return;
          }
          // Chunk i of every member lands at out + member * bytes + offset: a block of `count`
          // bytes whose extent is a whole member's share.
          forEachChunk(bytes, options_.maxCountPerCall, [&](std::int64_t offset, int count) {
            detail::ScopedDatatype block;
            detail::ScopedDatatype strided;
            TL_MPI_CHECK(MPI_Type_contiguous(count, MPI_BYTE, block.out()));
            TL_MPI_CHECK(MPI_Type_create_resized(block.get(), 0, bytes, strided.out()));
            TL_MPI_CHECK(MPI_Type_commit(strided.out()));
            requests.push_back(MPI_REQUEST_NULL);
            TL_MPI_CHECK(MPI_Iallgather(in + offset, count, MPI_BYTE, out + offset, 1,
                                        strided.get(), comm_, &requests.back()));
          });
        });
    return output;
  }

  // Every call first rethrows this communicator's failure, if any, and checks the thread.
  void enter(const char* operation) {
    if (failure_) std::rethrow_exception(failure_);
    checkOnMpiThread(operation);
    if (abandoned()) {
      failure_ = std::make_exception_ptr(lost(operation));
      std::rethrow_exception(failure_);
    }
  }

  // Members were lost (abandonCollectives after this communicator was made): whatever is in
  // flight is given up, its requests dropped.
  bool abandoned() const { return collectivesEpoch() != epoch_; }
  MembersLost lost(const std::string& operation) const {
    return MembersLost(str("mpi ", operation, " on rank ", rank_, " of ", size_,
                           ": abandoned, members of the job were lost"));
  }
  void throwIfAbandoned(const std::string& operation) const {
    if (abandoned()) throw lost(operation);
  }

  // Starts a collective's operations and waits for them until the deadline. Any failure once
  // operations may have started leaves members out of step, so it fails the communicator for
  // good: the error is kept and rethrown by every later call.
  void run(const std::function<std::string()>& describe, std::vector<at::Tensor> buffers,
           const CollectiveOptions& options,
           const std::function<void(std::vector<MPI_Request>&)>& start) {
    Started op = begin(std::move(buffers), options, start);
    finish(op, describe);
  }

  // Operations that are MPI requests, complete when MPI_Testall says so.
  Started begin(std::vector<at::Tensor> buffers, const CollectiveOptions& options,
                const std::function<void(std::vector<MPI_Request>&)>& start) {
    return beginPolled(std::move(buffers), options, [&](std::vector<at::Tensor>&) {
      auto requests = std::make_shared<std::vector<MPI_Request>>();
      start(*requests);
      return std::function<bool()>([requests] {
        int complete = 0;
        TL_MPI_CHECK(MPI_Testall(static_cast<int>(requests->size()), requests->data(), &complete,
                                 MPI_STATUSES_IGNORE));
        return complete != 0;
      });
    });
  }

  // The general form: start() begins the collective (adding to the buffers MPI may write into)
  // and returns its poll function (tl::Error when MPI fails).
  Started beginPolled(std::vector<at::Tensor> buffers, const CollectiveOptions& options,
                      const std::function<std::function<bool()>(std::vector<at::Tensor>&)>& start) {
    Started op;
    op.buffers = std::move(buffers);
    op.timeout = timeoutFor(options);
    op.deadline = detail::deadlineAfter(op.timeout);
    rollCall_->enter();
    try {
      op.poll = start(op.buffers);
    } catch (...) {
      fail(op, std::current_exception());
      throw;
    }
    return op;
  }

  // Every ring in flight moves on whenever any collective is polled, so a member waiting for one
  // collective never holds up a ring that its neighbours are waiting for.
  void progressRings() {
    throwIfAbandoned("collective");
    for (auto& slot : ringInSlot_)
      if (auto ring = slot.lock(); ring && !ring->done()) progressRing(*ring);
  }

  // Moves one ring on; once it is done its scratch space goes back to the pool.
  bool progressRing(detail::RingAllreduce& ring) {
    if (!ring.progress()) return false;
    if (at::Tensor space = ring.releaseScratch(); space.defined()) scratch_.give(std::move(space));
    return true;
  }

  // One poll: true once every operation of `op` is complete.
  bool progress(Started& op) {
    if (failure_) std::rethrow_exception(failure_);
    try {
      progressRings();
      return op.poll();
    } catch (...) {
      fail(op, std::current_exception());
      throw;
    }
  }

  void finish(Started& op, const std::function<std::string()>& describe) {
    try {
      unsigned polls = 0;
      const bool done = detail::pollUntil(
          [&] {
            // Peers whose own wait timed out ask who is here; answer every few polls.
            if (++polls % kPollsPerAnswer == 0) rollCall_->answer();
            progressRings();
            return op.poll();
          },
          op.deadline);
      if (!done) {
        const std::vector<int> absent = rollCall_->absentees(rollCallGrace(op.timeout));
        throw CollectiveTimeout(detail::timeoutMessage("mpi", describe(), rank_, size_, op.timeout,
                                                       rollCall_->describeAbsentees(absent, op.timeout)),
                                absent);
      }
    } catch (...) {
      fail(op, std::current_exception());
      throw;
    }
  }

  void fail(Started& op, std::exception_ptr error) {
    if (!failure_) failure_ = std::move(error);
    detail::keepAliveUntilFinalize(std::move(op.buffers));
  }

  // A started collective's handle: waits as the blocking collective does. `done`: one that
  // already completed (a staged CUDA tensor's).
  class Pending final : public PendingCollective {
   public:
    Pending(MpiCommunicator& comm, Started op, const char* operation, std::string description,
            bool done = false)
        : comm_(comm), op_(std::move(op)), operation_(operation),
          description_(std::move(description)), done_(done) {}
    ~Pending() override {
      if (!done_) {
        comm_.fail(op_, std::make_exception_ptr(Error(str("mpi ", description_, " was abandoned "
                                                           "before it completed"))));
      }
    }
    bool test() override {
      if (!done_) {
        comm_.enter(operation_);
        done_ = comm_.progress(op_);
      }
      return done_;
    }
    void wait() override {
      if (done_) return;
      comm_.enter(operation_);
      done_ = true;  // whatever happens next, this handle no longer owns a live operation
      comm_.finish(op_, [this] { return description_; });
    }

   private:
    MpiCommunicator& comm_;
    Started op_;
    const char* operation_;
    std::string description_;
    bool done_ = false;
  };

  // How long a roll call waits for answers: members that are there answer within
  // milliseconds, so the limit matters only for those that are not.
  static std::chrono::milliseconds rollCallGrace(std::chrono::milliseconds timeout) {
    return std::clamp<std::chrono::milliseconds>(timeout / 2, std::chrono::milliseconds(200),
                                                 std::chrono::seconds(5));
  }
  static constexpr unsigned kPollsPerAnswer = 8;

  MPI_Comm comm_;
  MpiCommunicatorOptions options_;
  std::uint64_t epoch_ = 0;  // collectivesEpoch() when made
  std::unique_ptr<detail::MpiRollCall> rollCall_;
  int rank_ = 0;
  int size_ = 0;
  std::exception_ptr failure_;
  std::optional<bool> spansHosts_;  // RingEncoding::Auto's answer, once asked
  static constexpr int kRingTagSlots = 64;
  std::uint64_t ringsStarted_ = 0;
  std::weak_ptr<detail::RingAllreduce> ringInSlot_[kRingTagSlots];
  detail::ScratchPool scratch_;
};

}  // namespace

std::unique_ptr<Communicator> createMpiWorldCommunicator(const MpiCommunicatorOptions& options) {
  checkOnMpiThread("createMpiWorldCommunicator");
  checkOptions(options);
  MPI_Comm world = MPI_COMM_NULL;
  TL_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
  return std::make_unique<MpiCommunicator>(world, options);
}

namespace detail {

MPI_Comm mpiHandle(Communicator& comm) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&comm);
  TL_CHECK(mpi != nullptr, "expected an MPI communicator, got ", comm.backend());
  return mpi->handle();
}

const MpiCommunicatorOptions& mpiOptions(Communicator& comm) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&comm);
  TL_CHECK(mpi != nullptr, "expected an MPI communicator, got ", comm.backend());
  return mpi->options();
}

std::unique_ptr<Communicator> adoptMpiCommunicator(MPI_Comm comm, const MpiCommunicatorOptions& options) {
  return std::make_unique<MpiCommunicator>(comm, options);
}

}  // namespace detail

}  // namespace tl::comm
