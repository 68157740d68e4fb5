#include "est/fiber_scheduler.h"

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/all.hpp>
#include <boost/fiber/protected_fixedsize_stack.hpp>

#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "common/check.h"

namespace tl::est {
namespace {

struct EstProperties : boost::fibers::fiber_properties {
  explicit EstProperties(boost::fibers::context* ctx) : fiber_properties(ctx) {}
  int est = -1;
};

// The switcher of the EstFibers alive on this thread (one at a time per thread).
thread_local ContextSwitcher* tSwitcher = nullptr;
thread_local int tActiveEst = -1;   // whose state is live
thread_local int tRunningEst = -1;  // whose fiber runs

// Round-robin FIFO scheduling, plus the EST context switch when the picked fiber belongs to
// another EST than the last one.
class EstAlgorithm final : public boost::fibers::algo::algorithm_with_properties<EstProperties> {
 public:
  void awakened(boost::fibers::context* ctx, EstProperties&) noexcept override {
    ctx->ready_link(ready_);
  }

  boost::fibers::context* pick_next() noexcept override {
    if (ready_.empty()) return nullptr;
    boost::fibers::context* next = &ready_.front();
    ready_.pop_front();
    int est = properties(next).est;
    tRunningEst = est;
    if (est != tActiveEst && tSwitcher != nullptr) {
      // Swapping state touches tensors; a failure here cannot be reported to anyone, and
      // carrying on would train with the wrong EST's state, so it is fatal.
      try {
        if (tActiveEst >= 0) tSwitcher->switchOut(tActiveEst);
        if (est >= 0) tSwitcher->switchIn(est);
        tActiveEst = est;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tl: fatal: EST context switch %d -> %d failed: %s\n", tActiveEst, est, e.what());
        std::abort();
      }
    }
    return next;
  }

  bool has_ready_fibers() const noexcept override { return !ready_.empty(); }

  void suspend_until(std::chrono::steady_clock::time_point const& until) noexcept override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (until == std::chrono::steady_clock::time_point::max()) {
      wake_.wait(lock, [this] { return notified_; });
    } else {
      wake_.wait_until(lock, until, [this] { return notified_; });
    }
    notified_ = false;
  }

  void notify() noexcept override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      notified_ = true;
    }
    wake_.notify_all();
  }

 private:
  boost::fibers::scheduler::ready_queue_type ready_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool notified_ = false;
};

thread_local bool tAlgorithmInstalled = false;

}  // namespace

struct EstFibers::Impl {
  ContextSwitcher* switcher;
  size_t stackBytes;
  std::vector<boost::fibers::fiber> fibers;
};

EstFibers::EstFibers(ContextSwitcher& switcher, size_t stackBytes)
    : impl_(std::make_unique<Impl>(Impl{&switcher, stackBytes, {}})) {
  if (!tAlgorithmInstalled) {
    boost::fibers::use_scheduling_algorithm<EstAlgorithm>();
    tAlgorithmInstalled = true;
  }
  TL_CHECK(tSwitcher == nullptr, "only one EstFibers may be alive per thread");
  tSwitcher = &switcher;
  tActiveEst = -1;
}

EstFibers::~EstFibers() {
  try {
    joinAll();
  } catch (...) {
  }
  // Leave the live state with the last EST that ran, saved into its context.
  if (tActiveEst >= 0) {
    try {
      tSwitcher->switchOut(tActiveEst);
    } catch (...) {
    }
  }
  tActiveEst = -1;
  tSwitcher = nullptr;
}

void EstFibers::launch(int est, std::function<void()> body) {
  TL_CHECK_GE(est, 0);
  boost::fibers::fiber f(boost::fibers::launch::post, std::allocator_arg,
                         boost::fibers::protected_fixedsize_stack(impl_->stackBytes), std::move(body));
  f.properties<EstProperties>().est = est;
  impl_->fibers.push_back(std::move(f));
}

void EstFibers::joinAll() {
  for (auto& f : impl_->fibers) {
    if (f.joinable()) f.join();
  }
  impl_->fibers.clear();
  tRunningEst = -1;
}

int EstFibers::currentEst() { return tRunningEst; }

}  // namespace tl::est
