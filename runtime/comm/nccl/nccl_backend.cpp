// NcclCommunicator: Communicator over an NCCL communicator, with deadlines and sticky failure.
#include <exception>
#include <functional>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/comm/collective_wait.h"
#include "runtime/comm/nccl/nccl_detail.h"

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

// Threading: one thread at a time, like every Communicator (NCCL and CUDA would allow more,
// but the sticky failure state is not synchronised).
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int device, std::unique_ptr<Communicator> ownedBootstrap)
      : comm_(comm), device_(device), bootstrap_(std::move(ownedBootstrap)) {
    TL_CUDA_CHECK(cudaSetDevice(device_));
    TL_NCCL_CHECK(ncclCommUserRank(comm_, &rank_));
    TL_NCCL_CHECK(ncclCommCount(comm_, &size_));
    // A blocking stream (not cudaStreamNonBlocking): it waits for work queued earlier on the
    // legacy default stream, where libtorch computed the tensors we are given.
    TL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamDefault));
    TL_CUDA_CHECK(cudaMalloc(&barrierWord_, sizeof(int)));
    TL_CUDA_CHECK(cudaMemset(barrierWord_, 0, sizeof(int)));
  }

  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (barrierWord_ != nullptr) cudaFree(barrierWord_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }

  void allreduce(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options) override {
    enter();
    checkCudaTensor(tensor, "allreduce", /*mustBeContiguous=*/true);
    const ncclDataType_t type = reductionType(tensor.scalar_type());
    void* data = tensor.data_ptr();
    run([&] { return str("allreduce(", toString(op), ", ", describeTensor(tensor), ")"); },
        options, [&] {
          TL_NCCL_CHECK(ncclAllReduce(data, data, tensor.numel(), type, reductionOp(op), comm_,
                                      stream_));
        });
  }

  // Bytes, not typed elements: broadcast copies, so every dtype works.
  void broadcast(at::Tensor& tensor, int root, const CollectiveOptions& options) override {
    enter();
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
    enter();
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
    enter();
    run([] { return std::string("barrier"); }, options, [&] {
      TL_NCCL_CHECK(ncclAllReduce(barrierWord_, barrierWord_, 1, ncclInt32, ncclSum, comm_,
                                  stream_));
    });
  }

  std::unique_ptr<Communicator> split(int color, int key,
                                      const CollectiveOptions& options) override {
    enter();
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
  void enter() const {
    if (failure_) std::rethrow_exception(failure_);
  }

  void checkCudaTensor(const at::Tensor& tensor, const char* operation, bool mustBeContiguous) {
    TL_CHECK(tensor.defined(), "nccl ", operation, " got an undefined tensor");
    const at::Device where = tensor.device();
    TL_CHECK(where.is_cuda() && (!where.has_index() || where.index() == device_), "nccl ",
             operation, " needs a CUDA tensor on cuda:", device_, ", got ", describeTensor(tensor));
    TL_CHECK(!mustBeContiguous || tensor.is_contiguous(), "nccl ", operation,
             " works in place on a contiguous tensor, got a non-contiguous one (",
             describeTensor(tensor), ")");
  }

  // Enqueues a collective on our stream and waits for it under the deadline, watching NCCL's
  // asynchronous errors too. A timeout or error aborts the NCCL communicator, which also stops
  // its kernels, and fails this communicator for good.
  void run(const std::function<std::string()>& describe, const CollectiveOptions& options,
           const std::function<void()>& enqueue) {
    const std::chrono::milliseconds timeout = timeoutFor(options);
    const Clock::time_point deadline = deadlineAfter(timeout);
    try {
      TL_CUDA_CHECK(cudaSetDevice(device_));
      enqueue();
      cudaError_t streamState = cudaErrorNotReady;
      ncclResult_t asyncState = ncclSuccess;
      const bool done = pollUntil(
          [&] {
            streamState = cudaStreamQuery(stream_);
            if (streamState != cudaErrorNotReady) return true;
            TL_NCCL_CHECK(ncclCommGetAsyncError(comm_, &asyncState));
            return asyncState != ncclSuccess;
          },
          deadline);
      if (streamState != cudaSuccess && streamState != cudaErrorNotReady)
        throwCudaError(streamState, "cudaStreamQuery", __FILE__, __LINE__);
      if (asyncState != ncclSuccess)
        throwNcclError(asyncState, "ncclCommGetAsyncError", __FILE__, __LINE__);
      if (!done)
        throw TimeoutError(timeoutMessage("nccl", describe(), rank_, size_, timeout));
    } catch (...) {
      fail();
      throw;
    }
  }

  void fail() {
    failure_ = std::current_exception();
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
  std::unique_ptr<Communicator> bootstrap_;  // only without ncclCommSplit
  std::exception_ptr failure_;
};

}  // namespace

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
