// Gradients handed over from autograd's threads to the training thread while backward runs
// (--overlap on a GPU; on a CPU when a test asks for it).
//
// Why a hand-over: for a CUDA graph, libtorch runs the nodes, and so the gradient accumulators'
// post-hooks, on its device thread, while the thread that called backward() sits inside the
// engine until the whole graph is done. The reducer and the communicator belong to the training
// thread: MPI is called from one thread (checkOnMpiThread), NCCL forbids concurrent calls on one
// communicator, the reducer is unsynchronised, and the exact reducer's GPU quantisation reads
// each tensor's maximum back to the host, which on autograd's device thread would stall the
// launching of backward's kernels. So backward runs on a helper thread; the hooks only push
// (tensor index, gradient, ready event) into a mutex-protected queue; the training thread drains
// it, handing each gradient to the reducer, which starts the buckets' collectives in bucket
// order as they complete, while backward computes the earlier layers.
//
// Thread rule:
//  - run() is called on the training thread, and the consumer runs there, in push order.
//  - push() is called from any thread (autograd's device thread, the helper thread running
//    backward's CPU nodes), only while run() is in progress; it does nothing else.
//  - the helper thread runs only the backward function given to run(), with the training
//    thread's autograd and grad-mode state and its current stream on the device.
// run() returns only after backward has returned and the queue is empty, so what the hooks
// wrote happens-before anything the training thread does next. Between gradients the training
// thread sleeps on a condition variable, as it would inside backward() itself: the other fibers
// of that thread wait as they did, and a started collective is never waited for there (its
// PendingCollective is tested as the next gradient comes, and waited for in finish()).
//
// CUDA ordering: push() records an event on the pushing thread's current stream of the
// gradient's device (the stream autograd computed it on); before consuming the gradient, the
// training thread makes its own current stream wait for that event, so the kernels it queues
// on the gradient (the copy into a bucket, the quantisation) follow the gradient's, whichever
// stream autograd used. The queue holds a reference to each gradient, so the caching allocator
// cannot hand its memory to anyone before the consumer has queued its work on it; the reducer's
// buckets, which the communicator's stream reads and writes, are the reducer's own tensors.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>

namespace tl::est {

class GradientHandoff {
 public:
  using Clock = std::chrono::steady_clock;
  // The consumer: gradient `index`, complete (on the device: for the calling thread's stream).
  using Consume = std::function<void(size_t index, const at::Tensor& grad)>;

  // Gradients live on `device` (CPU or CUDA).
  explicit GradientHandoff(c10::Device device) : device_(device) {}
  GradientHandoff(const GradientHandoff&) = delete;
  GradientHandoff& operator=(const GradientHandoff&) = delete;

  // Runs `backward` on a helper thread and, meanwhile, `consume` on the calling thread for each
  // pushed gradient, in push order. Returns once backward has returned and every gradient pushed
  // was consumed. Rethrows backward's exception, else the consumer's first (after backward has
  // returned: a backward pass cannot be left midway; gradients pushed after the consumer threw
  // are dropped).
  void run(const std::function<void()>& backward, const Consume& consume);

  // Any thread, while run() runs: gradient `index` is final. False (and nothing queued) when no
  // run() is in progress.
  bool push(size_t index, const at::Tensor& grad);

  // When the last run's backward returned (on the helper thread).
  Clock::time_point backwardEnd() const { return backwardEnd_; }

 private:
  struct Ready {
    size_t index;
    at::Tensor grad;
    std::optional<c10::Event> produced;  // CUDA: recorded on the producing stream
  };

  void drain(const Consume& consume, std::exception_ptr& consumeError);

  const c10::Device device_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Ready> queue_;        // guarded by mutex_
  bool running_ = false;           // guarded by mutex_: push() accepts
  bool backwardDone_ = false;      // guarded by mutex_
  Clock::time_point backwardEnd_;  // written by the helper before backwardDone_
};

}  // namespace tl::est
