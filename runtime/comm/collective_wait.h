// Shared by the backends: waiting for a collective under a deadline, and the words used in
// their error messages.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <ATen/core/Tensor.h>

namespace tl::comm::detail {

using Clock = std::chrono::steady_clock;

// The moment a collective that starts now must be done by. Saturates instead of overflowing
// for huge timeouts; a negative timeout is a caller bug (tl::Error).
Clock::time_point deadlineAfter(std::chrono::milliseconds timeout);

// Calls isDone() until it returns true (then returns true) or `deadline` passes (then false).
// isDone() runs at least once, even when the deadline has already passed.
//
// It polls hot only for a moment, then yields, then sleeps with a growing pause capped at
// 1 ms: small jobs and CI run more ranks than cores (mpirun --oversubscribe on 2 cores), and a
// rank spinning on MPI_Test would steal the core that a slower peer needs to reach the
// collective at all.
bool pollUntil(const std::function<bool()>& isDone, Clock::time_point deadline);

// "1000 float32 elements on cpu"
std::string describeTensor(const at::Tensor& tensor);

// "float32"; PyTorch's dtype names, which users know from Python.
std::string dtypeName(at::ScalarType type);

// The message of the TimeoutError every backend throws. `who` says which members did not join
// when the backend knows ("rank 1 (host h) did not join it within 2 s").
std::string timeoutMessage(const std::string& backend, const std::string& operation, int rank,
                           int size, std::chrono::milliseconds timeout,
                           const std::string& who = "");

}  // namespace tl::comm::detail
