#include "est/gradient_handoff.h"

#include <ATen/ThreadLocalState.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <thread>

#include "common/check.h"

namespace tl::est {

namespace {

// The calling thread's current stream on `device`.
c10::Stream currentStream(c10::Device device) {
  return c10::impl::VirtualGuardImpl(device.type()).getStream(device);
}

}  // namespace

void GradientHandoff::run(const std::function<void()>& backward, const Consume& consume) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TL_CHECK(!running_, "GradientHandoff::run() is not reentrant");
    TL_CHECK(queue_.empty(), "GradientHandoff: gradients left from an earlier run");
    running_ = true;
    backwardDone_ = false;
  }
  // What autograd's calling thread would see: grad mode, dispatch state, and (CUDA) the current
  // stream, which the engine synchronises the gradients' streams with at the end.
  const at::ThreadLocalState callerState;
  std::optional<c10::Stream> callerStream;
  if (device_.is_cuda()) callerStream = currentStream(device_);

  std::exception_ptr backwardError;
  std::thread helper;
  auto body = [&] {
    try {
      at::ThreadLocalStateGuard stateGuard(callerState);
      std::optional<c10::StreamGuard> streamGuard;
      if (callerStream) streamGuard.emplace(*callerStream);
      backward();
    } catch (...) {
      backwardError = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    backwardEnd_ = Clock::now();
    backwardDone_ = true;
    changed_.notify_all();
  };
  try {
    helper = std::thread(body);
  } catch (...) {  // no thread to be had: nothing ran, nothing is queued
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    throw;
  }

  std::exception_ptr consumeError;
  drain(consume, consumeError);
  helper.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }
  if (backwardError) std::rethrow_exception(backwardError);
  if (consumeError) std::rethrow_exception(consumeError);
}

void GradientHandoff::drain(const Consume& consume, std::exception_ptr& consumeError) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return !queue_.empty() || backwardDone_; });
    if (queue_.empty()) return;  // backward is done and every gradient consumed
    Ready ready = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (!consumeError) {
      try {
        if (ready.produced) ready.produced->block(currentStream(ready.grad.device()));
        consume(ready.index, ready.grad);
      } catch (...) {
        consumeError = std::current_exception();
      }
    }
    ready = Ready{};  // drop the references outside the lock
    lock.lock();
  }
}

bool GradientHandoff::push(size_t index, const at::Tensor& grad) {
  Ready ready{index, grad, std::nullopt};
  if (grad.defined() && grad.is_cuda()) {
    ready.produced.emplace(grad.device().type());
    ready.produced->record(currentStream(grad.device()));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!running_ || backwardDone_) return false;
  queue_.push_back(std::move(ready));
  changed_.notify_all();
  return true;
}

}  // namespace tl::est
