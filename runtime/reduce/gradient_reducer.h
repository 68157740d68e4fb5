// Gradient reduction across data-parallel workers.
//
// A step goes: beginStep(); addContribution(grads) once per local worker; finish(out, total),
// which combines every process's contributions and writes the mean over all `total`
// contributions into `out`. With one contribution per process this is DDP's allreduce-average;
// with several (logical workers multiplexed on a process) the same call sequence applies.
//
// Overlap with backward (--overlap on): a process's last contribution of a round may be
// streamed: streamContribution(), then addGradient(t, grad) for each tensor as soon as backward
// has produced it, then addContribution(grads) with all of them as usual (it adds the tensors not
// streamed). The buckets' collectives start as their tensors come in, in bucket order, and run
// while backward computes; finish() waits for them. The result is the same, bit for bit, as
// without streaming.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/comm/communicator.h"
#include "runtime/reduce/reduction.h"

namespace tl::reduce {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  virtual std::string mode() const = 0;

  virtual void beginStep() = 0;
  // `grads` in parameter order, same shapes every call. The reducer copies what it needs.
  virtual void addContribution(const std::vector<at::Tensor>& grads) = 0;
  // The next addContribution is this process's last of the round and comes tensor by tensor.
  virtual void streamContribution() = 0;
  // Tensor t (parameter order) of the streamed contribution, final for this round; each at most
  // once, in any order. The reducer copies what it needs.
  virtual void addGradient(size_t t, const at::Tensor& grad) = 0;
  // Returns false when the step must be recomputed and contributed again (a mode whose
  // speculative choices turned out wrong); `out` is then untouched.
  virtual bool finish(std::vector<at::Tensor>& out, int64_t totalContributions) = 0;

  // State that later results depend on, for checkpoints (empty for stateless modes).
  virtual std::vector<std::pair<std::string, at::Tensor>> state() const { return {}; }
  virtual void loadState(const std::vector<std::pair<std::string, at::Tensor>>& state) {}

  // How many times finish() returned false so far (for metrics).
  virtual int64_t replays() const { return 0; }

  // When each bucket's collective started in the last round (for metrics: how much of the
  // reduction overlapped backward).
  virtual std::vector<std::chrono::steady_clock::time_point> bucketStartTimes() const = 0;
};

// Plain float allreduce in buckets of about `bucketBytes` (DDP's default is 25 MiB). Fast; the
// bits depend on the number of processes and the collective's summation order.
std::unique_ptr<GradientReducer> createFp32Reducer(comm::Communicator& comm,
                                                   const std::vector<at::Tensor>& params,
                                                   int64_t bucketBytes);

// "--reduction exact": the mean's bits are the same for every placement of the contributions
// on processes and every collective algorithm (64-bit fixed point with per-tensor power-of-two
// scales shared by all processes, int64 sums, one correctly rounded division; see
// exact_reducer.cpp). Parameters must be float32; `paramNames` (one per parameter) name the
// tensor in errors, e.g. a non-finite gradient. finish() returns false on the first step and
// whenever a step's gradients do not fit the scales chosen from the step before; the
// contributions must then be recomputed identically. Its state() must be checkpointed.
//
// `collectives`: how the integer sums travel. ReduceScatter (the default): a reduce-scatter of
// the int64 sums, each process turning its segment into float32 means, then an allgather of
// the means (12 bytes per element moved where an fp32 allreduce moves 8). Allreduce: an int64
// allreduce of the sums (16 bytes), kept to compare against; both give the same bits.
enum class ExactCollectives { ReduceScatter, Allreduce };
// Auto: the raw CPU loops for CPU tensors, the batched device path (fixed_point.h) otherwise.
// Batched: the batched path whatever the device (tests compare it with the loops on the CPU).
enum class ExactKernels { Auto, Batched };
std::unique_ptr<GradientReducer> createExactReducer(
    comm::Communicator& comm, const std::vector<at::Tensor>& params,
    std::vector<std::string> paramNames, int64_t bucketBytes,
    ExactCollectives collectives = ExactCollectives::ReduceScatter,
    ExactKernels kernels = ExactKernels::Auto);

// The reducer for reduction mode `mode`. `paramNames` is used by modes that name tensors in
// their errors.
std::unique_ptr<GradientReducer> createReducer(Reduction mode, comm::Communicator& comm,
                                               const std::vector<at::Tensor>& params,
                                               std::vector<std::string> paramNames, int64_t bucketBytes);

}  // namespace tl::reduce
