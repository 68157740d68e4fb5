// MpiCommunicator: Communicator over an MPI communicator, with deadlines and sticky failure.
// The class is declared in mpi_communicator_class.h; its rings start in mpi_ring_launch.cpp.
#include "runtime/comm/mpi/mpi_communicator.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/comm/mpi/mpi_communicator_class.h"

namespace tl::comm {

namespace {

// Calls chunk(offset, count) for consecutive pieces of [0, total) of at most maxCount each.
void forEachChunk(std::int64_t total, std::int64_t maxCount,
                  const std::function<void(std::int64_t, int)>& chunk) {
  for (std::int64_t offset = 0; offset < total; offset += maxCount)
    chunk(offset, static_cast<int>(std::min(maxCount, total - offset)));
}

void checkOptions(const MpiCommunicatorOptions& options) {
  TL_CHECK_GE(options.maxCountPerCall, 1, "MpiCommunicatorOptions::maxCountPerCall");
  TL_CHECK_LE(options.maxCountPerCall, std::numeric_limits<int>::max(),
              "MpiCommunicatorOptions::maxCountPerCall must fit MPI's int counts");
  TL_CHECK_GE(options.ringMinBytes, 0, "MpiCommunicatorOptions::ringMinBytes");
  TL_CHECK_GE(options.ringChunkBytes, 1, "MpiCommunicatorOptions::ringChunkBytes");
}

// How long a roll call waits for answers: members that are there answer within
// milliseconds, so the limit matters only for those that are not.
std::chrono::milliseconds rollCallGrace(std::chrono::milliseconds timeout) {
  return std::clamp<std::chrono::milliseconds>(timeout / 2, std::chrono::milliseconds(200),
                                               std::chrono::seconds(5));
}
constexpr unsigned kPollsPerAnswer = 8;

}  // namespace

namespace detail {

void checkMpiTensor(const at::Tensor& tensor, const char* operation, bool mustBeContiguous) {
  TL_CHECK(tensor.defined(), "mpi ", operation, " got an undefined tensor");
  TL_CHECK(tensor.device().is_cpu() || tensor.device().is_cuda(), "mpi ", operation,
           " needs a CPU or CUDA tensor, got ", describeTensor(tensor));
  TL_CHECK(!mustBeContiguous || tensor.is_contiguous(), "mpi ", operation,
           " works in place on a contiguous tensor, got a non-contiguous one (",
           describeTensor(tensor), ")");
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, MpiCommunicatorOptions options)
    : comm_(comm), options_(options), epoch_(collectivesEpoch()) {
  // Errors come back as codes, become tl::Error, and fail this communicator only.
  TL_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  TL_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  TL_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  options_.ringEncoding = ringEncodingFromEnvironment(options_.ringEncoding);
  rollCall_ = std::make_unique<MpiRollCall>(comm_);
}

MpiCommunicator::~MpiCommunicator() {
  rollCall_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Freeing is fine with abandoned operations pending: MPI frees the communicator once they
  // are done, or at MPI_Finalize.
  if (!finalized) MPI_Comm_free(&comm_);
}

void MpiCommunicator::allreduce(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options) {
  enter("allreduce");
  checkMpiTensor(tensor, "allreduce", /*mustBeContiguous=*/true);
  if (!tensor.is_cuda()) return allreduceHost(tensor, op, options, tensor);
  at::Tensor host = tensor.cpu();
  allreduceHost(host, op, options, tensor);
  tensor.copy_(host);
}

std::unique_ptr<PendingCollective> MpiCommunicator::startAllreduce(at::Tensor& tensor, ReduceOp op,
                                                                   const CollectiveOptions& options) {
  // A CUDA tensor is staged through host memory around the collective: blocking.
  if (tensor.is_cuda()) return Communicator::startAllreduce(tensor, op, options);
  enter("allreduce");
  checkMpiTensor(tensor, "allreduce", /*mustBeContiguous=*/true);
  Started started = beginAllreduce(tensor, op, options);
  return pending(std::move(started), "allreduce",
                 str("allreduce(", toString(op), ", ", describeTensor(tensor), ")"));
}

// Bytes, not typed elements: broadcast copies, so every dtype works.
void MpiCommunicator::broadcast(at::Tensor& tensor, int root, const CollectiveOptions& options) {
  enter("broadcast");
  checkMpiTensor(tensor, "broadcast", /*mustBeContiguous=*/true);
  TL_CHECK(root >= 0 && root < size_, "mpi broadcast from root ", root, " on a communicator of size ", size_);
  if (!tensor.is_cuda()) return broadcastHost(tensor, root, options, tensor);
  at::Tensor host = tensor.cpu();
  broadcastHost(host, root, options, tensor);
  tensor.copy_(host);
}

at::Tensor MpiCommunicator::allgather(const at::Tensor& tensor, const CollectiveOptions& options) {
  enter("allgather");
  checkMpiTensor(tensor, "allgather", /*mustBeContiguous=*/false);
  if (!tensor.is_cuda()) return allgatherHost(tensor.contiguous(), options, tensor);
  return allgatherHost(tensor.cpu().contiguous(), options, tensor).to(tensor.device());
}

void MpiCommunicator::barrier(const CollectiveOptions& options) {
  enter("barrier");
  run([] { return std::string("barrier"); }, {}, options, [&](std::vector<MPI_Request>& requests) {
    requests.push_back(MPI_REQUEST_NULL);
    TL_MPI_CHECK(MPI_Ibarrier(comm_, &requests.back()));
  });
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key, const CollectiveOptions& options) {
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

// The collectives on host memory; errors name `shown`, the caller's tensor.
void MpiCommunicator::allreduceHost(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options,
                                    const at::Tensor& shown) {
  Started started = beginAllreduce(tensor, op, options);
  finish(started, [&] { return str("allreduce(", toString(op), ", ", describeTensor(shown), ")"); });
}

// Large sums the ring may take (ringMayReduce) go around a ring of point-to-point messages
// (mpi_ring_allreduce.h); the rest through MPI_Iallreduce in chunks.
MpiCommunicator::Started MpiCommunicator::beginAllreduce(at::Tensor& tensor, ReduceOp op,
                                                         const CollectiveOptions& options) {
  const std::int64_t itemSize = tensor.element_size();
  if (size_ > 1 && std::int64_t(tensor.nbytes()) >= options_.ringMinBytes &&
      ringMayReduce(op, tensor.scalar_type(), size_, options.anyFixedOrder)) {
    return beginRing(tensor, RingPhases::ReduceScatterThenAllgather, "allreduce", options,
                     compactRing(tensor, options));
  }
  const MPI_Datatype type = reductionDatatype(tensor.scalar_type());
  const MPI_Op mpiOp = reductionOperation(op);
  auto* base = static_cast<char*>(tensor.data_ptr());
  return begin({tensor}, options, [&](std::vector<MPI_Request>& requests) {
    forEachChunk(tensor.numel(), options_.maxCountPerCall, [&](std::int64_t offset, int count) {
      requests.push_back(MPI_REQUEST_NULL);
      TL_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, base + offset * itemSize, count, type, mpiOp, comm_,
                                  &requests.back()));
    });
  });
}

void MpiCommunicator::broadcastHost(at::Tensor& tensor, int root, const CollectiveOptions& options,
                                    const at::Tensor& shown) {
  auto* base = static_cast<char*>(tensor.data_ptr());
  run([&] { return str("broadcast(root ", root, ", ", describeTensor(shown), ")"); }, {tensor}, options,
      [&](std::vector<MPI_Request>& requests) {
        forEachChunk(tensor.nbytes(), options_.maxCountPerCall, [&](std::int64_t offset, int count) {
          requests.push_back(MPI_REQUEST_NULL);
          TL_MPI_CHECK(MPI_Ibcast(base + offset, count, MPI_BYTE, root, comm_, &requests.back()));
        });
      });
}

at::Tensor MpiCommunicator::allgatherHost(const at::Tensor& input, const CollectiveOptions& options,
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
          TL_MPI_CHECK(MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                                      MPI_BYTE, comm_, &requests.back()));
          return;
        }
        // Chunk i of every member lands at out + member * bytes + offset: a block of `count`
        // bytes whose extent is a whole member's share.
        forEachChunk(bytes, options_.maxCountPerCall, [&](std::int64_t offset, int count) {
          ScopedDatatype block;
          ScopedDatatype strided;
          TL_MPI_CHECK(MPI_Type_contiguous(count, MPI_BYTE, block.out()));
          TL_MPI_CHECK(MPI_Type_create_resized(block.get(), 0, bytes, strided.out()));
          TL_MPI_CHECK(MPI_Type_commit(strided.out()));
          requests.push_back(MPI_REQUEST_NULL);
          TL_MPI_CHECK(MPI_Iallgather(in + offset, count, MPI_BYTE, out + offset, 1, strided.get(), comm_,
                                      &requests.back()));
        });
      });
  return output;
}

// Every call first rethrows this communicator's failure, if any, and checks the thread.
void MpiCommunicator::enter(const char* operation) {
  if (failure_) std::rethrow_exception(failure_);
  checkOnMpiThread(operation);
  if (abandoned()) {
    failure_ = std::make_exception_ptr(lost(operation));
    std::rethrow_exception(failure_);
  }
}

// Members were lost (abandonCollectives after this communicator was made): whatever is in
// flight is given up, its requests dropped.
MembersLost MpiCommunicator::lost(const std::string& operation) const {
  return MembersLost(str("mpi ", operation, " on rank ", rank_, " of ", size_,
                         ": abandoned, members of the job were lost"));
}

// Starts a collective's operations and waits for them until the deadline. Any failure once
// operations may have started leaves members out of step, so it fails the communicator for
// good: the error is kept and rethrown by every later call.
void MpiCommunicator::run(const std::function<std::string()>& describe, std::vector<at::Tensor> buffers,
                          const CollectiveOptions& options,
                          const std::function<void(std::vector<MPI_Request>&)>& start) {
  Started op = begin(std::move(buffers), options, start);
  finish(op, describe);
}

// Operations that are MPI requests, complete when MPI_Testall says so.
MpiCommunicator::Started MpiCommunicator::begin(std::vector<at::Tensor> buffers, const CollectiveOptions& options,
                                                const std::function<void(std::vector<MPI_Request>&)>& start,
                                                bool collective) {
  return beginPolled(std::move(buffers), options, [&](std::vector<at::Tensor>&) {
    auto requests = std::make_shared<std::vector<MPI_Request>>();
    start(*requests);
    return std::function<bool()>([requests] {
      int complete = 0;
      TL_MPI_CHECK(MPI_Testall(static_cast<int>(requests->size()), requests->data(), &complete,
                               MPI_STATUSES_IGNORE));
      return complete != 0;
    });
  }, collective);
}

// The general form: start() begins the collective (adding to the buffers MPI may write into)
// and returns its poll function (tl::Error when MPI fails).
MpiCommunicator::Started MpiCommunicator::beginPolled(
    std::vector<at::Tensor> buffers, const CollectiveOptions& options,
    const std::function<std::function<bool()>(std::vector<at::Tensor>&)>& start, bool collective) {
  Started op;
  op.buffers = std::move(buffers);
  op.timeout = timeoutFor(options);
  op.deadline = deadlineAfter(op.timeout);
  if (collective) rollCall_->enter();
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
void MpiCommunicator::progressRings() {
  throwIfAbandoned("collective");
  for (auto& slot : ringInSlot_)
    if (auto ring = slot.lock(); ring && !ring->done()) progressRing(*ring);
}

// Moves one ring on; once it is done its scratch space goes back to the pool.
bool MpiCommunicator::progressRing(RingAllreduce& ring) {
  if (!ring.progress()) return false;
  if (at::Tensor space = ring.releaseScratch(); space.defined()) scratch_.give(std::move(space));
  return true;
}

// One poll: true once every operation of `op` is complete.
bool MpiCommunicator::progress(Started& op) {
  if (failure_) std::rethrow_exception(failure_);
  try {
    progressRings();
    return op.poll();
  } catch (...) {
    fail(op, std::current_exception());
    throw;
  }
}

void MpiCommunicator::finish(Started& op, const std::function<std::string()>& describe) {
  try {
    unsigned polls = 0;
    const bool done = pollUntil(
        [&] {
          // Peers whose own wait timed out ask who is here; answer every few polls.
          if (++polls % kPollsPerAnswer == 0) rollCall_->answer();
          progressRings();
          return op.poll();
        },
        op.deadline);
    if (!done && op.peer) {
      throw TimeoutError(timeoutMessage("mpi", describe(), rank_, size_, op.timeout,
                                        str("rank ", *op.peer, " did not take part in time")));
    }
    if (!done) {
      const std::vector<int> absent = rollCall_->absentees(rollCallGrace(op.timeout));
      throw CollectiveTimeout(timeoutMessage("mpi", describe(), rank_, size_, op.timeout,
                                             rollCall_->describeAbsentees(absent, op.timeout)),
                              absent);
    }
  } catch (...) {
    fail(op, std::current_exception());
    throw;
  }
}

void MpiCommunicator::fail(Started& op, std::exception_ptr error) {
  if (!failure_) failure_ = std::move(error);
  keepAliveUntilFinalize(std::move(op.buffers));
}

// A started collective's handle: waits as the blocking collective does. `done`: one that
// already completed (a staged CUDA tensor's).
class MpiCommunicator::Pending final : public PendingCollective {
 public:
  Pending(MpiCommunicator& comm, Started op, const char* operation, std::string description, bool done)
      : comm_(comm), op_(std::move(op)), operation_(operation), description_(std::move(description)),
        done_(done) {}
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

std::unique_ptr<PendingCollective> MpiCommunicator::pending(Started started, const char* operation,
                                                            std::string description, bool done) {
  return std::make_unique<Pending>(*this, std::move(started), operation, std::move(description), done);
}

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

std::unique_ptr<Communicator> createMpiWorldCommunicator(const MpiCommunicatorOptions& options) {
  detail::checkOnMpiThread("createMpiWorldCommunicator");
  checkOptions(options);
  MPI_Comm world = MPI_COMM_NULL;
  TL_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
  return std::make_unique<detail::MpiCommunicator>(world, options);
}

}  // namespace tl::comm
