#include "dataload/loader.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/clock.h"
#include "dataload/batch_tensors.h"
#include "dataload/buffer_pool.h"

namespace tl::data {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// One lock guards everything below; samples are produced outside it, into slots that stay put
// (the deque holds pointers) until the consumer takes them, which it only does once every
// sample of the slot is finished, so no thread writes to a slot the consumer has taken.
class Loader::Impl {
 public:
  Impl(std::shared_ptr<const SampleSource> source, Plan plan, const LoaderOptions& options)
      : source_(std::move(source)), plan_(std::move(plan)), options_(options) {
    TL_CHECK(source_ != nullptr && plan_ != nullptr);
    input_ = source_->inputSpec();
    target_ = source_->targetSpec();
    TL_REQUIRE(options.workers >= 0, "loader workers must not be negative, got ",
               options.workers);
    TL_REQUIRE(options.prefetch >= 1, "loader prefetch must be at least 1, got ",
               options.prefetch);
    TL_REQUIRE(options.samplesPerTask >= 1, "loader samples per task must be at least 1, got ",
               options.samplesPerTask);
    try {
      setWorkers(options.workers);
    } catch (...) {
      stopWorkers();  // no destructor runs for a half-built object
      throw;
    }
  }

  ~Impl() { stopWorkers(); }

  std::optional<Batch> next();
  void setWorkers(int workers);

  int workers() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return targetWorkers_;
  }

  LoaderStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  // One batch in flight, in plan order.
  struct Slot {
    BatchRequest request;
    at::Tensor images;
    at::Tensor labels;
    uint8_t* inputData = nullptr;
    uint8_t* targetData = nullptr;
    int64_t claimed = 0;   // samples handed to some thread
    int64_t finished = 0;  // samples written, or given up after an error
    std::exception_ptr error;
    int64_t size() const { return int64_t(request.indices.size()); }
    bool complete() const { return finished == size(); }
  };
  struct Task {
    Slot* slot = nullptr;
    int64_t begin = 0;
    int64_t end = 0;
  };

  void workerLoop(int id);
  // Each worker finishes its current task, then exits; joins them all.
  void stopWorkers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    workReady_.notify_all();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }
  // The rest: called with mutex_ held.
  size_t window() const { return size_t(std::max(1, targetWorkers_ * options_.prefetch)); }
  void pullFromPlan();
  std::optional<Task> claimTask(Slot& slot);
  std::optional<Task> claimAnyTask();
  void finishTask(const Task& task, std::exception_ptr error, double seconds);
  // Called without the lock: produces the task's samples.
  std::exception_ptr runTask(const Task& task, std::vector<uint8_t>& scratch) const;
  void runTaskUnlocked(const Task& task, std::unique_lock<std::mutex>& lock,
                       std::vector<uint8_t>& scratch);

  const std::shared_ptr<const SampleSource> source_;
  SampleSpec input_;   // of one sample
  SampleSpec target_;
  const Plan plan_;
  const LoaderOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable workReady_;   // workers: a task may be available, or they must exit
  std::condition_variable batchReady_;  // consumer: the front slot completed, or the plan ended
  std::deque<std::unique_ptr<Slot>> slots_;
  bool planDone_ = false;
  std::exception_ptr planError_;
  bool sampleFailed_ = false;  // no new batches are started after a failure
  std::exception_ptr stickyError_;
  int targetWorkers_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // threads_[i] runs workerLoop(i)
  std::vector<uint8_t> consumerScratch_;
  TensorBufferPool imageBuffers_{1};  // keeps window() + 2 batches' memory for reuse
  LoaderStats stats_;
};

void Loader::Impl::pullFromPlan() {
  // A throwing plan, or a batch that cannot be allocated, ends the stream with that error;
  // next() raises it once the batches before it are consumed.
  try {
    std::optional<BatchRequest> request = plan_();
    if (request) {
      auto slot = std::make_unique<Slot>();
      slot->request = std::move(*request);
      slot->images = imageBuffers_.empty(batchShape(slot->size(), input_), scalarType(input_.dtype));
      slot->labels = at::empty(batchShape(slot->size(), target_), scalarType(target_.dtype));
      slot->inputData = static_cast<uint8_t*>(slot->images.data_ptr());
      slot->targetData = static_cast<uint8_t*>(slot->labels.data_ptr());
      slots_.push_back(std::move(slot));
      if (slots_.back()->complete()) batchReady_.notify_all();  // an empty batch
      return;
    }
  } catch (...) {
    planError_ = std::current_exception();
  }
  planDone_ = true;
  batchReady_.notify_all();
}

std::optional<Loader::Impl::Task> Loader::Impl::claimTask(Slot& slot) {
  if (slot.claimed == slot.size()) return std::nullopt;
  Task task{&slot, slot.claimed, std::min(slot.size(), slot.claimed + options_.samplesPerTask)};
  slot.claimed = task.end;
  return task;
}

std::optional<Loader::Impl::Task> Loader::Impl::claimAnyTask() {
  for (auto& slot : slots_) {
    if (auto task = claimTask(*slot)) return task;
  }
  while (!planDone_ && !sampleFailed_ && slots_.size() < window()) {
    pullFromPlan();
    if (!planDone_) {
      if (auto task = claimTask(*slots_.back())) return task;
    }
  }
  return std::nullopt;
}

std::exception_ptr Loader::Impl::runTask(const Task& task, std::vector<uint8_t>& scratch) const {
  const int64_t inputBytes = input_.bytes(), targetBytes = target_.bytes();
  const BatchRequest& request = task.slot->request;
  try {
    for (int64_t i = task.begin; i < task.end; ++i) {
      // The next sample of the batch, even when the next task takes it: most often this thread.
      if (i + 1 < task.slot->size()) source_->prefetch(request.indices[size_t(i + 1)]);
      source_->loadSample(request.epoch, request.indices[size_t(i)],
                          task.slot->inputData + i * inputBytes,
                          task.slot->targetData + i * targetBytes, scratch);
    }
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

void Loader::Impl::finishTask(const Task& task, std::exception_ptr error, double seconds) {
  Slot& slot = *task.slot;
  slot.finished += task.end - task.begin;
  stats_.workerBusySeconds += seconds;
  if (error) {
    if (!slot.error) slot.error = error;
    sampleFailed_ = true;
  }
  // Only the front batch can end the consumer's wait.
  if (slot.complete() && &slot == slots_.front().get()) batchReady_.notify_all();
}

void Loader::Impl::runTaskUnlocked(const Task& task, std::unique_lock<std::mutex>& lock,
                                   std::vector<uint8_t>& scratch) {
  lock.unlock();
  const Clock::time_point start = Clock::now();
  std::exception_ptr error = runTask(task, scratch);
  const double seconds = secondsSince(start);
  lock.lock();
  finishTask(task, error, seconds);
}

void Loader::Impl::workerLoop(int id) {
  std::vector<uint8_t> scratch;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_ && id < targetWorkers_) {
    if (auto task = claimAnyTask()) {
      runTaskUnlocked(*task, lock, scratch);
    } else {
      workReady_.wait(lock);
    }
  }
}

std::optional<Batch> Loader::Impl::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stickyError_) std::rethrow_exception(stickyError_);
  const Clock::time_point start = Clock::now();
  while (slots_.empty() || !slots_.front()->complete()) {
    if (slots_.empty() && planDone_) {
      stats_.waitSeconds += secondsSince(start);
      if (planError_) {
        stickyError_ = planError_;
        std::rethrow_exception(stickyError_);
      }
      return std::nullopt;
    }
    if (targetWorkers_ == 0) {
      // Synchronous loading: this thread produces the front batch.
      if (slots_.empty()) {
        pullFromPlan();
        continue;
      }
      std::optional<Task> task = claimTask(*slots_.front());
      // setWorkers joins retired workers, and they finish their task before they exit, so
      // nobody else can hold a part of this batch.
      TL_CHECK(task.has_value(), "the front batch is claimed but no worker is left");
      runTaskUnlocked(*task, lock, consumerScratch_);
      continue;
    }
    batchReady_.wait(lock);
  }
  stats_.waitSeconds += secondsSince(start);

  std::unique_ptr<Slot> slot = std::move(slots_.front());
  slots_.pop_front();
  workReady_.notify_all();  // room for one more batch in flight
  if (slot->error) {
    stickyError_ = slot->error;
    std::rethrow_exception(stickyError_);
  }
  stats_.batches += 1;
  stats_.images += slot->size();
  return Batch{std::move(slot->images), std::move(slot->labels), std::move(slot->request)};
}

void Loader::Impl::setWorkers(int workers) {
  TL_REQUIRE(workers >= 0, "loader workers must not be negative, got ", workers);
  std::vector<std::thread> retiring;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    targetWorkers_ = workers;
    stats_.workers = workers;
    // The batches in flight, plus the one the trainer uses and the one it just dropped.
    imageBuffers_.setMaxIdleBuffers(window() + 2);
    while (int(threads_.size()) > workers) {
      retiring.push_back(std::move(threads_.back()));
      threads_.pop_back();
    }
    try {
      while (int(threads_.size()) < workers) {
        threads_.emplace_back(&Impl::workerLoop, this, int(threads_.size()));
      }
    } catch (...) {
      // The system refused a thread: keep the pool that did start, consistent with the target.
      targetWorkers_ = int(threads_.size());
      stats_.workers = targetWorkers_;
      throw;
    }
  }
  workReady_.notify_all();
  for (std::thread& thread : retiring) thread.join();
}

Loader::Loader(std::shared_ptr<const SampleSource> source, Plan plan,
               const LoaderOptions& options)
    : impl_(std::make_unique<Impl>(std::move(source), std::move(plan), options)) {}

Loader::~Loader() = default;

std::optional<Batch> Loader::next() { return impl_->next(); }
void Loader::setWorkers(int workers) { impl_->setWorkers(workers); }
int Loader::workers() const { return impl_->workers(); }
LoaderStats Loader::stats() const { return impl_->stats(); }

}  // namespace tl::data
