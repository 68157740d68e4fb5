// The MPI backend's Communicator, declared for the backend's own files: mpi_communicator.cpp
// (the collectives, waiting, failure) and mpi_ring_launch.cpp (starting rings). Not for callers
// (it includes <mpi.h>); they hold a Communicator from the factories in mpi_communicator.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/comm/collective_timeout.h"
#include "runtime/comm/collective_wait.h"
#include "runtime/comm/mpi/mpi_detail.h"
#include "runtime/comm/mpi/mpi_ring_allreduce.h"
#include "runtime/comm/mpi/mpi_roll_call.h"
#include "runtime/comm/mpi/scratch_pool.h"

namespace tl::comm::detail {

// CPU tensors travel as they are; CUDA tensors are staged through host memory (this MPI need not
// be CUDA-aware), which lets several processes share one GPU where NCCL would refuse them.
void checkMpiTensor(const at::Tensor& tensor, const char* operation, bool mustBeContiguous);

// Threading: used from the MpiSession's thread only (checked on entry to every collective).
// Members call collectives in the same order; each call starts nonblocking MPI operations and
// waits for them under its deadline.
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, MpiCommunicatorOptions options);
  ~MpiCommunicator() override;

  MPI_Comm handle() const { return comm_; }
  const MpiCommunicatorOptions& options() const { return options_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void allreduce(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options) override;
  std::unique_ptr<PendingCollective> startAllreduce(at::Tensor& tensor, ReduceOp op,
                                                    const CollectiveOptions& options) override;
  // Either half of the ring alone (mpi_ring_allreduce.h): whatever the size, since that is what
  // saves the bytes, and an integer sum's bits do not depend on the order.
  std::unique_ptr<PendingCollective> startReduceScatter(at::Tensor& tensor,
                                                        const CollectiveOptions& options) override {
    return startHalfRing("reduceScatter", RingPhases::ReduceScatter, tensor, options);
  }
  std::unique_ptr<PendingCollective> startAllgatherSegments(
      at::Tensor& tensor, const CollectiveOptions& options) override {
    return startHalfRing("allgatherSegments", RingPhases::Allgather, tensor, options);
  }
  void broadcast(at::Tensor& tensor, int root, const CollectiveOptions& options) override;
  at::Tensor allgather(const at::Tensor& tensor, const CollectiveOptions& options) override;
  void barrier(const CollectiveOptions& options) override;
  std::unique_ptr<Communicator> split(int color, int key, const CollectiveOptions& options) override;
  // mpi_point_to_point.cpp.
  bool pointToPoint() const override { return true; }
  std::unique_ptr<PendingCollective> startSend(const at::Tensor& tensor, int peer, int tag,
                                               const CollectiveOptions& options) override;
  std::unique_ptr<PendingCollective> startReceive(at::Tensor& tensor, int peer, int tag,
                                                  const CollectiveOptions& options) override;

 private:
  class Pending;

  // A collective whose operations have started: what MPI still writes into, and its deadline.
  struct Started {
    std::function<bool()> poll;  // moves the operations on; true once all are complete
    std::vector<at::Tensor> buffers;
    std::chrono::milliseconds timeout{};
    Clock::time_point deadline;
    std::optional<int> peer;  // point-to-point: the other member (no roll call on a timeout)
  };

  std::unique_ptr<PendingCollective> startPointToPoint(const char* operation, at::Tensor& tensor, int peer,
                                                       int tag, const CollectiveOptions& options);

  // mpi_ring_launch.cpp: a half of the ring, a ring started, whether it travels compact.
  std::unique_ptr<PendingCollective> startHalfRing(const char* operation, RingPhases phases,
                                                   at::Tensor& tensor, const CollectiveOptions& options);
  Started beginRing(at::Tensor tensor, RingPhases phases, const char* operation,
                    const CollectiveOptions& options, bool compact);
  bool compactRing(const at::Tensor& tensor, const CollectiveOptions& options);

  // A handle on a started collective (`done`: one that already completed).
  std::unique_ptr<PendingCollective> pending(Started started, const char* operation,
                                             std::string description, bool done = false);
  void allreduceHost(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options,
                     const at::Tensor& shown);
  Started beginAllreduce(at::Tensor& tensor, ReduceOp op, const CollectiveOptions& options);
  void broadcastHost(at::Tensor& tensor, int root, const CollectiveOptions& options,
                     const at::Tensor& shown);
  at::Tensor allgatherHost(const at::Tensor& input, const CollectiveOptions& options,
                           const at::Tensor& shown);

  void enter(const char* operation);
  bool abandoned() const { return collectivesEpoch() != epoch_; }
  MembersLost lost(const std::string& operation) const;
  void throwIfAbandoned(const std::string& operation) const {
    if (abandoned()) throw lost(operation);
  }
  void run(const std::function<std::string()>& describe, std::vector<at::Tensor> buffers,
           const CollectiveOptions& options, const std::function<void(std::vector<MPI_Request>&)>& start);
  // `collective`: counted for the roll call (point-to-point is not: members take part in
  // different messages).
  Started begin(std::vector<at::Tensor> buffers, const CollectiveOptions& options,
                const std::function<void(std::vector<MPI_Request>&)>& start, bool collective = true);
  Started beginPolled(std::vector<at::Tensor> buffers, const CollectiveOptions& options,
                      const std::function<std::function<bool()>(std::vector<at::Tensor>&)>& start,
                      bool collective = true);
  void progressRings();
  bool progressRing(RingAllreduce& ring);
  bool progress(Started& op);
  void finish(Started& op, const std::function<std::string()>& describe);
  void fail(Started& op, std::exception_ptr error);

  MPI_Comm comm_;
  MpiCommunicatorOptions options_;
  std::uint64_t epoch_ = 0;  // collectivesEpoch() when made
  std::unique_ptr<MpiRollCall> rollCall_;
  int rank_ = 0;
  int size_ = 0;
  std::exception_ptr failure_;
  std::optional<bool> spansHosts_;  // RingEncoding::Auto's answer, once asked
  static constexpr int kRingTagSlots = 64;
  std::uint64_t ringsStarted_ = 0;
  std::weak_ptr<RingAllreduce> ringInSlot_[kRingTagSlots];
  ScratchPool scratch_;
};

}  // namespace tl::comm::detail
