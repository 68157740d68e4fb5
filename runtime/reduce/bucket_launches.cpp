#include "runtime/reduce/bucket_launches.h"

#include <algorithm>

#include "common/check.h"

namespace tl::reduce {

BucketLaunches::BucketLaunches(std::vector<size_t> bucketOfTensor, size_t bucketCount, Start start)
    : bucketOf_(std::move(bucketOfTensor)),
      tensorsIn_(bucketCount, 0),
      start_(std::move(start)),
      pending_(bucketCount),
      startedAt_(bucketCount),
      seen_(bucketOf_.size(), 0),
      missing_(bucketCount, 0) {
  for (size_t b : bucketOf_) {
    TL_CHECK_LT(b, bucketCount, "bucket of a tensor");
    ++tensorsIn_[b];
  }
}

void BucketLaunches::reset() {
  // One left unfinished (a round abandoned by an error) fails its communicator when destroyed.
  for (auto& p : pending_) p.reset();
  next_ = 0;
  streaming_ = false;
  std::fill(startedAt_.begin(), startedAt_.end(), Clock::time_point{});
}

void BucketLaunches::beginStream() {
  TL_CHECK(!streaming_, "a contribution is being streamed already");
  TL_CHECK_EQ(next_, size_t(0), "a contribution is streamed after buckets started");
  streaming_ = true;
  std::fill(seen_.begin(), seen_.end(), 0);
  missing_ = tensorsIn_;
}

void BucketLaunches::checkStreamable(size_t t, bool heldByCaller) const {
  TL_CHECK_LT(t, seen_.size(), "streamed tensor index");
  TL_CHECK(streaming_, "addGradient() outside a streamed contribution");
  TL_CHECK(!streamed(t) && !heldByCaller, "tensor ", t, " was streamed twice in one contribution");
}

void BucketLaunches::add(size_t t) {
  TL_CHECK(streaming_, "a gradient was streamed outside streamContribution()");
  TL_CHECK_LT(t, seen_.size(), "streamed tensor index");
  TL_CHECK(seen_[t] == 0, "tensor ", t, " was streamed twice in one contribution");
  seen_[t] = 1;
  --missing_[bucketOf_[t]];
  size_t end = next_;
  while (end < missing_.size() && missing_[end] == 0) ++end;
  // Open MPI moves a nonblocking collective forward only inside MPI calls: poke the started
  // ones now and then, as backward hands over tensors.
  for (size_t b = 0; b < next_; ++b) {
    if (pending_[b]) pending_[b]->test();
  }
  startThrough(end);
}

void BucketLaunches::endStream() {
  TL_CHECK(streaming_, "endStream() without beginStream()");
  startAll();
}

void BucketLaunches::startAll() { startThrough(missing_.size()); }

void BucketLaunches::startThrough(size_t end) {
  for (; next_ < end; ++next_) {
    startedAt_[next_] = Clock::now();
    pending_[next_] = start_(next_);
  }
}

void BucketLaunches::wait(size_t b) {
  TL_CHECK_LT(b, next_, "bucket ", b, " was not started");
  if (!pending_[b]) return;
  pending_[b]->wait();
  pending_[b].reset();
}

void BucketLaunches::waitAll() {
  for (size_t b = 0; b < next_; ++b) wait(b);
}

}  // namespace tl::reduce
