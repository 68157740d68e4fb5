#include "runtime/comm/collective_wait.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "common/check.h"
#include "runtime/comm/collective_timeout.h"

namespace tl::comm {
namespace {
std::atomic<std::uint64_t> gEpoch{0};
}  // namespace

void abandonCollectives() { gEpoch.fetch_add(1); }
std::uint64_t collectivesEpoch() { return gEpoch.load(); }

}  // namespace tl::comm

namespace tl::comm::detail {

namespace {

// Hot polling keeps a collective whose peers are already there at MPI latency. Open MPI moves a
// large collective forward only inside MPI_Test, so long naps between polls stall its pipeline
// (a 45 MB allreduce took 3x longer with naps growing to 1 ms): poll while yielding the core to
// runnable threads for a while, then nap only briefly, so a waiting rank costs a few percent of
// a core and a long transfer still gets a progress call every ~0.1 ms.
constexpr auto kSpinFor = std::chrono::microseconds(50);
constexpr auto kYieldUntil = std::chrono::milliseconds(30);
constexpr auto kFirstSleep = std::chrono::microseconds(20);
constexpr auto kLongestSleep = std::chrono::microseconds(60);

}  // namespace

Clock::time_point deadlineAfter(std::chrono::milliseconds timeout) {
  TL_CHECK(timeout.count() >= 0, "a collective timeout cannot be negative (got ",
           timeout.count(), " ms)");
  const Clock::time_point now = Clock::now();
  const auto headroom =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  return timeout >= headroom ? Clock::time_point::max() : now + timeout;
}

bool pollUntil(const std::function<bool()>& isDone, Clock::time_point deadline) {
  const Clock::time_point start = Clock::now();
  auto pause = kFirstSleep;
  while (true) {
    if (isDone()) return true;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return false;
    const auto waited = now - start;
    if (waited < kSpinFor) continue;
    if (waited < kYieldUntil) {
      std::this_thread::yield();
      continue;
    }
    const auto untilDeadline =
        std::chrono::duration_cast<std::chrono::microseconds>(deadline - now);
    std::this_thread::sleep_for(std::min<std::chrono::microseconds>(pause, untilDeadline));
    pause = std::min<std::chrono::microseconds>(pause * 2, kLongestSleep);
  }
}

std::string dtypeName(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kInt:
      return "int32";
    case at::kLong:
      return "int64";
    case at::kShort:
      return "int16";
    case at::kChar:
      return "int8";
    case at::kByte:
      return "uint8";
    case at::kBool:
      return "bool";
    default:
      return c10::toString(type);
  }
}

std::string describeTensor(const at::Tensor& tensor) {
  if (!tensor.defined()) return "an undefined tensor";
  return str(tensor.numel(), " ", dtypeName(tensor.scalar_type()), " elements on ",
             tensor.device().str());
}

std::string timeoutMessage(const std::string& backend, const std::string& operation, int rank,
                           int size, std::chrono::milliseconds timeout, const std::string& who) {
  return str(backend, " ", operation, " timed out after ", timeout.count(), " ms on rank ", rank,
             " of a communicator of size ", size,
             who.empty() ? " (a member did not join it in time)" : ": " + who,
             "; this communicator is unusable from now on");
}

}  // namespace tl::comm::detail
