// NcclCommunicator: Communicator over an NCCL communicator, with deadlines and sticky failure.
#include <exception>
#include <functional>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/comm/collective_timeout.h"
#include "runtime/comm/collective_wait.h"
#include "runtime/comm/nccl/nccl_detail.h"
#include "runtime/comm/sticky_failure.h"

namespace tl::comm::detail {

namespace {

ncclDataType_t reductionType(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return ncclFloat32;
    case at::kDouble:
      return ncclFloat64;
    case at::kInt:
      return ncclInt32;
    case at::kLong:
      return ncclInt64;
    case at::kByte:
      return ncclUint8;
    default:
      throw Error(str("nccl allreduce does not support dtype ", dtypeName(type),
                      " (supported: float32, float64, int32, int64, uint8)"));
  }
}

ncclRedOp_t reductionOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
  }
  throw Error(str("unknown ReduceOp ", static_cast<int>(op)));
}

// Threading: one thread at a time, like every Communicator, and its PendingCollectives on that
// thread too (NCCL forbids concurrent calls on one communicator, and the sticky failure state is
// not synchronised). With --overlap on a GPU that is the training thread: autograd's device
// thread only queues gradients (est/gradient_handoff.h).
//
// Streams: every collective runs on the communicator's own stream, created non-blocking so that
// a started allreduce runs beside the kernels that libtorch keeps queueing on the legacy default
// stream (a blocking stream would be serialised with them). Each call first makes that stream
// wait for an event recorded on the caller's current stream (waitForProducer), which orders it
// after the kernels that computed the tensor. A blocking call returns once its stream is idle;
// a started allreduce records an event after it, which its PendingCollective polls with
// cudaEventQuery (never blocking a fiber), under the same deadline and NCCL error checks.
// Tensors: the caller keeps a started allreduce's tensor untouched until its wait(); the
// PendingCollective also holds a reference, so the caching allocator cannot reuse the memory
// while the communicator's stream may still write it.
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int device, std::unique_ptr<Communicator> ownedBootstrap)
      : comm_(comm), device_(device), bootstrap_(std::move(ownedBootstrap)),
        failure_("nccl", [this] { abortNccl(); }) {
    TL_CUDA_CHECK(cudaSetDevice(device_));
    TL_NCCL_CHECK(ncclCommUserRank(comm_, &rank_));
    TL_NCCL_CHECK(ncclCommCount(comm_, &size_));
    TL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TL_CUDA_CHECK(cudaEventCreateWithFlags(&legacyProducerReady_, cudaEventDisableTiming));
    TL_CUDA_CHECK(cudaMalloc(&barrierWord_, sizeof(int)));
    TL_CUDA_CHECK(cudaMemset(barrierWord_, 0, sizeof(int)));
  }

  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    // An aborted communicator has nothing left to destroy. One made before members of the job
    // were lost is aborted, never destroyed: ncclCommDestroy (and MPI_Comm_free for a bootstrap
    // of our own) would wait for them.
    if (failure_.abandoned()) {
      abortNccl();
      (void)bootstrap_.release();
    }
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (barrierWord_ != nullptr) cudaFree(barrierWord_);
    if (torchProducerReady_ != nullptr) {
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)
          ->destroyEvent(torchProducerReady_, static_cast<c10::DeviceIndex>(device_));
    }
    if (legacyProducerReady_ != nullptr) cudaEventDestroy(legacyProducerReady_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }

  void allreduce(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options) override {
    enter("allreduce");
    checkCudaTensor(tensor, "allreduce", /*mustBeContiguous=*/true);
    const ncclDataType_t type = reductionType(tensor.scalar_type());
    void* data = tensor.data_ptr();
    run([&] { return str("allreduce(", toString(op), ", ", describeTensor(tensor), ")"); },
        options, [&] {
          TL_NCCL_CHECK(ncclAllReduce(data, data, tensor.numel(), type, reductionOp(op), comm_,
                                      stream_));
        });
  }

  std::unique_ptr<PendingCollective> startAllreduce(at::Tensor& tensor, ReduceOp op,
                                                    const CollectiveOptions& options) override {
    enter("allreduce");
    checkCudaTensor(tensor, "allreduce", /*mustBeContiguous=*/true);
    const ncclDataType_t type = reductionType(tensor.scalar_type());
    const std::chrono::milliseconds timeout = timeoutFor(options);
    const Clock::time_point deadline = deadlineAfter(timeout);
    cudaEvent_t done = nullptr;
    try {
      TL_CUDA_CHECK(cudaSetDevice(device_));
      TL_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      waitForProducer();
      void* data = tensor.data_ptr();
      TL_NCCL_CHECK(ncclAllReduce(data, data, tensor.numel(), type, reductionOp(op), comm_, stream_));
      TL_CUDA_CHECK(cudaEventRecord(done, stream_));
    } catch (...) {
      if (done != nullptr) cudaEventDestroy(done);
      fail();
      throw;
    }
    return std::make_unique<Pending>(*this, std::vector<at::Tensor>{tensor}, done, deadline, timeout,
                                     str("allreduce(", toString(op), ", ", describeTensor(tensor), ")"));
  }

  std::unique_ptr<PendingCollective> startReduceScatter(at::Tensor& tensor,
                                                        const CollectiveOptions& options) override {
    return startSegmented("reduceScatter", tensor, options, /*reduce=*/true);
  }

  std::unique_ptr<PendingCollective> startAllgatherSegments(
      at::Tensor& tensor, const CollectiveOptions& options) override {
    return startSegmented("allgatherSegments", tensor, options, /*reduce=*/false);
  }

  // Bytes, not typed elements: broadcast copies, so every dtype works.
  void broadcast(at::Tensor& tensor, int root, const CollectiveOptions& options) override {
    enter("broadcast");
    checkCudaTensor(tensor, "broadcast", /*mustBeContiguous=*/true);
    TL_CHECK(root >= 0 && root < size_, "nccl broadcast from root ", root,
             " on a communicator of size ", size_);
    void* data = tensor.data_ptr();
    run([&] { return str("broadcast(root ", root, ", ", describeTensor(tensor), ")"); }, options,
        [&] {
          TL_NCCL_CHECK(ncclBroadcast(data, data, tensor.nbytes(), ncclUint8, root, comm_, stream_));
        });
  }

  at::Tensor allgather(const at::Tensor& tensor, const CollectiveOptions& options) override {
    enter("allgather");
    checkCudaTensor(tensor, "allgather", /*mustBeContiguous=*/false);
    at::Tensor input = tensor.contiguous();
    std::vector<std::int64_t> shape{size_};
    shape.insert(shape.end(), input.sizes().begin(), input.sizes().end());
    at::Tensor output = at::empty(shape, input.options());
    run([&] { return str("allgather(", describeTensor(input), ")"); }, options, [&] {
      TL_NCCL_CHECK(ncclAllGather(input.data_ptr(), output.data_ptr(), input.nbytes(), ncclUint8,
                                  comm_, stream_));
    });
    return output;
  }

  void barrier(const CollectiveOptions& options) override {
    enter("barrier");
    run([] { return std::string("barrier"); }, options, [&] {
      TL_NCCL_CHECK(ncclAllReduce(barrierWord_, barrierWord_, 1, ncclInt32, ncclSum, comm_,
                                  stream_));
    });
  }

  // abandonNcclCommunicator: aborts now, unless failed already; every later call throws.
  void abandon() {
    failWith(std::make_exception_ptr(MembersLost(str("nccl communicator of rank ", rank_, " of ", size_,
                                                     ": aborted, members of the job were lost"))));
  }

  std::unique_ptr<Communicator> split(int color, int key,
                                      const CollectiveOptions& options) override {
    enter("split");
    // The split itself is blocking; meeting every member first under the deadline means it
    // can only hang on a member that died in between.
    barrier(options);
#if TL_NCCL_HAS_COMM_SPLIT
    ncclComm_t child = nullptr;
    try {
      TL_NCCL_CHECK(ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child,
                                  nullptr));
    } catch (...) {
      fail();
      throw;
    }
    if (child == nullptr) return nullptr;
    std::unique_ptr<Communicator> wrapped = wrapNcclCommunicator(child, device_, nullptr);
    wrapped->setTimeout(timeout());
    return wrapped;
#else
    std::unique_ptr<Communicator> childBootstrap = bootstrap_->split(color, key, options);
    if (childBootstrap == nullptr) return nullptr;
    Communicator& childBootstrapRef = *childBootstrap;
    std::unique_ptr<Communicator> wrapped =
        setUpNcclCommunicator(childBootstrapRef, device_, std::move(childBootstrap));
    wrapped->setTimeout(timeout());
    return wrapped;
#endif
  }

 private:
  // Every call first rethrows this communicator's failure, or fails it with MembersLost when
  // members of the job were lost since it was made (StickyFailure).
  void enter(const char* operation) { failure_.check(operation, rank_, size_); }

  void checkCudaTensor(const at::Tensor& tensor, const char* operation, bool mustBeContiguous) {
    TL_CHECK(tensor.defined(), "nccl ", operation, " got an undefined tensor");
    const at::Device where = tensor.device();
    TL_CHECK(where.is_cuda() && (!where.has_index() || where.index() == device_), "nccl ",
             operation, " needs a CUDA tensor on cuda:", device_, ", got ", describeTensor(tensor));
    TL_CHECK(!mustBeContiguous || tensor.is_contiguous(), "nccl ", operation,
             " works in place on a contiguous tensor, got a non-contiguous one (",
             describeTensor(tensor), ")");
  }

  // ncclReduceScatter (sum) or ncclAllGather, started: in place when the segments (segmentOf)
  // are all one length; otherwise through a buffer of size() equal slots, copied on our stream
  // (NCCL's segments must be equal, tl's differ by one element when numel % size != 0). The
  // slots' padding is never read.
  std::unique_ptr<PendingCollective> startSegmented(const char* operation, at::Tensor& tensor,
                                                    const CollectiveOptions& options, bool reduce) {
    enter(operation);
    checkCudaTensor(tensor, operation, /*mustBeContiguous=*/true);
    const ncclDataType_t type = reductionType(tensor.scalar_type());
    const std::int64_t numel = tensor.numel();
    const std::int64_t slot = (numel + size_ - 1) / size_;
    const bool equal = numel % size_ == 0;
    const std::int64_t itemSize = tensor.element_size();
    at::Tensor slots = equal ? tensor : at::empty({slot * size_}, tensor.options());
    const std::chrono::milliseconds timeout = timeoutFor(options);
    const Clock::time_point deadline = deadlineAfter(timeout);
    cudaEvent_t done = nullptr;
    try {
      TL_CUDA_CHECK(cudaSetDevice(device_));
      TL_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      waitForProducer();
      auto* flat = static_cast<char*>(tensor.data_ptr());
      auto* padded = static_cast<char*>(slots.data_ptr());
      // Member r's segment between the tensor and slot r: everyone's, or only this member's.
      const auto copy = [&](bool intoSlots, bool onlyMine) {
        for (int r = 0; r < size_; ++r) {
          const Segment segment = segmentOf(numel, size_, r);
          if ((onlyMine && r != rank_) || segment.length == 0) continue;
          char* inTensor = flat + segment.offset * itemSize;
          char* inSlot = padded + r * slot * itemSize;
          TL_CUDA_CHECK(cudaMemcpyAsync(intoSlots ? inSlot : inTensor, intoSlots ? inTensor : inSlot,
                                        segment.length * itemSize, cudaMemcpyDeviceToDevice, stream_));
        }
      };
      char* mine = padded + rank_ * slot * itemSize;
      if (numel > 0 && reduce) {
        if (!equal) copy(/*intoSlots=*/true, /*onlyMine=*/false);
        TL_NCCL_CHECK(ncclReduceScatter(padded, mine, slot, type, ncclSum, comm_, stream_));
        if (!equal) copy(/*intoSlots=*/false, /*onlyMine=*/true);
      } else if (numel > 0) {
        if (!equal) copy(/*intoSlots=*/true, /*onlyMine=*/true);
        TL_NCCL_CHECK(ncclAllGather(mine, padded, slot, type, comm_, stream_));
        if (!equal) copy(/*intoSlots=*/false, /*onlyMine=*/false);
      }
      TL_CUDA_CHECK(cudaEventRecord(done, stream_));
    } catch (...) {
      if (done != nullptr) cudaEventDestroy(done);
      fail();
      throw;
    }
    return std::make_unique<Pending>(*this, std::vector<at::Tensor>{tensor, slots}, done, deadline,
                                     timeout, str(operation, "(", describeTensor(tensor), ")"));
  }

  // A started collective: its completion event, polled on the communicator's thread.
  class Pending final : public PendingCollective {
   public:
    Pending(NcclCommunicator& comm, std::vector<at::Tensor> tensors, cudaEvent_t done,
            Clock::time_point deadline, std::chrono::milliseconds timeout, std::string description)
        : comm_(comm), tensors_(std::move(tensors)), done_(done), deadline_(deadline),
          timeout_(timeout), description_(std::move(description)) {}

    ~Pending() override {
      if (!finished_ && !comm_.failure_.failed() && cudaEventQuery(done_) != cudaSuccess) {
        // Dropped while unwinding from a loss (another communicator's MembersLost): the loss is
        // the failure, as every later call should say.
        if (comm_.failure_.abandoned()) {
          comm_.abandon();
        } else {
          comm_.failWith(std::make_exception_ptr(
              Error(str("nccl ", description_, " was abandoned before it completed"))));
        }
      }
      cudaEventDestroy(done_);
    }

    bool test() override {
      if (finished_) return true;
      enterOrFinish();
      finished_ = comm_.poll([this] { return cudaEventQuery(done_); }, deadline_, timeout_,
                             [this] { return description_; });
      return finished_;
    }

    void wait() override {
      if (finished_) return;
      enterOrFinish();
      finished_ = true;  // whatever happens next, this handle no longer owns a live operation
      comm_.await([this] { return cudaEventQuery(done_); }, deadline_, timeout_,
                  [this] { return description_; });
    }

   private:
    // Throws the communicator's sticky failure (MembersLost once members were lost); the
    // aborted operation is then finished too.
    void enterOrFinish() {
      try {
        comm_.failure_.check([this] { return description_; }, comm_.rank_, comm_.size_);
      } catch (...) {
        finished_ = true;
        throw;
      }
    }

    NcclCommunicator& comm_;
    std::vector<at::Tensor> tensors_;  // kept allocated while the stream may use them
    cudaEvent_t done_;
    Clock::time_point deadline_;
    std::chrono::milliseconds timeout_;
    std::string description_;
    bool finished_ = false;
  };

  // Makes our stream wait for the work queued so far on the calling thread's current stream of
  // our device, where libtorch computed the tensors we are given. libtorch's CUDA guard keeps a
  // cudaEvent_t in its void* event handle; without libtorch's CUDA support (no CUDA tensors
  // then) the producer is the legacy default stream.
  void waitForProducer() {
    if (c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) {
      const auto* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
      const c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_));
      guard->record(&torchProducerReady_, guard->getStream(device), device.index(),
                    c10::EventFlag::PYTORCH_DEFAULT);
      TL_CUDA_CHECK(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(torchProducerReady_), 0));
    } else {
      TL_CUDA_CHECK(cudaEventRecord(legacyProducerReady_, cudaStreamLegacy));
      TL_CUDA_CHECK(cudaStreamWaitEvent(stream_, legacyProducerReady_, 0));
    }
  }

  // One look at our work (`query`: cudaStreamQuery or cudaEventQuery): true when it is done,
  // false while it runs. Members of the job lost (abandonCollectives), a CUDA or NCCL
  // asynchronous error, or the deadline passed, aborts the NCCL communicator, which also stops
  // its kernels (those waiting for a lost peer too), fails this communicator for good and throws
  // (MembersLost, tl::Error, TimeoutError).
  bool poll(const std::function<cudaError_t()>& query, Clock::time_point deadline,
            std::chrono::milliseconds timeout, const std::function<std::string()>& describe) {
    try {
      failure_.check(describe, rank_, size_);
      const cudaError_t state = query();
      if (state == cudaSuccess) return true;
      if (state != cudaErrorNotReady) throwCudaError(state, "querying the collective's completion", __FILE__, __LINE__);
      ncclResult_t asyncState = ncclSuccess;
      TL_NCCL_CHECK(ncclCommGetAsyncError(comm_, &asyncState));
      if (asyncState != ncclSuccess)
        throwNcclError(asyncState, "ncclCommGetAsyncError", __FILE__, __LINE__);
      if (Clock::now() >= deadline)
        throw TimeoutError(timeoutMessage("nccl", describe(), rank_, size_, timeout));
      return false;
    } catch (...) {
      fail();
      throw;
    }
  }

  // Polls until the work is done, without blocking other fibers (pollUntil), or throws as poll.
  void await(const std::function<cudaError_t()>& query, Clock::time_point deadline,
             std::chrono::milliseconds timeout, const std::function<std::string()>& describe) {
    if (!pollUntil([&] { return poll(query, deadline, timeout, describe); }, deadline)) {
      poll(query, deadline, timeout, describe);  // past the deadline: done at the last moment, or throws
    }
  }

  // Enqueues a collective on our stream after the caller's producing work, and waits for it
  // under the deadline (await).
  void run(const std::function<std::string()>& describe, const CollectiveOptions& options,
           const std::function<void()>& enqueue) {
    const std::chrono::milliseconds timeout = timeoutFor(options);
    const Clock::time_point deadline = deadlineAfter(timeout);
    try {
      TL_CUDA_CHECK(cudaSetDevice(device_));
      waitForProducer();
      enqueue();
    } catch (...) {
      fail();
      throw;
    }
    await([this] { return cudaStreamQuery(stream_); }, deadline, timeout, describe);
  }

  void fail() { failWith(std::current_exception()); }

  // Keeps the first failure; that one aborts the NCCL communicator (abortNccl).
  void failWith(std::exception_ptr failure) { failure_.fail(std::move(failure)); }

  void abortNccl() {
    if (comm_ != nullptr) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
  }

  ncclComm_t comm_ = nullptr;
  int device_ = 0;
  int rank_ = 0;
  int size_ = 0;
  cudaStream_t stream_ = nullptr;
  int* barrierWord_ = nullptr;
  void* torchProducerReady_ = nullptr;        // libtorch's CUDA event (a cudaEvent_t)
  cudaEvent_t legacyProducerReady_ = nullptr;  // without libtorch's CUDA support
  std::unique_ptr<Communicator> bootstrap_;  // only without ncclCommSplit
  StickyFailure failure_;
};

}  // namespace

void abandonNccl(Communicator& nccl) {
  auto* ours = dynamic_cast<NcclCommunicator*>(&nccl);
  TL_CHECK(ours != nullptr, "abandonNcclCommunicator: given a communicator of backend '", nccl.backend(),
           "', not one made by createNcclCommunicator");
  ours->abandon();
}

std::unique_ptr<Communicator> wrapNcclCommunicator(ncclComm_t comm, int device,
                                                   std::unique_ptr<Communicator> ownedBootstrap) {
  try {
    return std::make_unique<NcclCommunicator>(comm, device, std::move(ownedBootstrap));
  } catch (...) {
    ncclCommDestroy(comm);
    throw;
  }
}

}  // namespace tl::comm::detail
