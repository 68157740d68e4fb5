// The collectives of a reducer's buckets in one round, and when each may start.
//
// Buckets start in index order (buckets hold the parameters in reverse order, so the first is
// the one backward completes first), each once all its tensors are in: every member then starts
// the same collectives in the same order, whichever tensors it had first. Without a streamed
// contribution every bucket starts in finish(); with one (GradientReducer::streamContribution),
// a bucket starts as soon as backward has handed over its last tensor, and its collective runs
// while backward computes the rest.
//
// Threading: the communicator's thread only, as the reducer that owns it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/comm/communicator.h"

namespace tl::reduce {

class BucketLaunches {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts bucket b's collective.
  using Start = std::function<std::unique_ptr<comm::PendingCollective>(size_t bucket)>;

  // `bucketOfTensor[t]`: the bucket holding parameter tensor t; buckets are 0..bucketCount-1.
  BucketLaunches(std::vector<size_t> bucketOfTensor, size_t bucketCount, Start start);

  // A new round: nothing started, nothing streamed.
  void reset();

  // The contribution being added is streamed tensor by tensor.
  void beginStream();
  bool streaming() const { return streaming_; }
  // Whether tensor t was handed over in the current stream.
  bool streamed(size_t t) const { return streaming_ && seen_[t] != 0; }
  // A reducer's addGradient(t) checks, one error each: t names a tensor, a streamed contribution
  // is open, and t was not handed over in it before (`heldByCaller`: the reducer holds t itself,
  // not yet passed to add()).
  void checkStreamable(size_t t, bool heldByCaller = false) const;
  // Tensor t of the streamed contribution is in: starts the buckets that are now complete, and
  // lets the started ones progress. Error if t was already streamed.
  void add(size_t t);
  // Every tensor of the streamed contribution is in (the ones never streamed were added by the
  // caller): starts every bucket not started yet.
  void endStream();

  // Starts every bucket not started yet (finish(), when no contribution was streamed).
  void startAll();
  // Waits for bucket b's collective (started before).
  void wait(size_t b);
  void waitAll();

  size_t buckets() const { return missing_.size(); }
  // When each bucket's collective started in the last round (Clock::time_point{} if it did not).
  const std::vector<Clock::time_point>& startTimes() const { return startedAt_; }

 private:
  void startThrough(size_t end);  // starts buckets next_..end-1

  std::vector<size_t> bucketOf_;
  std::vector<size_t> tensorsIn_;  // per bucket: how many tensors it holds
  Start start_;
  std::vector<std::unique_ptr<comm::PendingCollective>> pending_;
  std::vector<Clock::time_point> startedAt_;
  size_t next_ = 0;  // buckets before it have started
  bool streaming_ = false;
  std::vector<char> seen_;         // per tensor, in the current stream
  std::vector<size_t> missing_;    // per bucket: tensors of the current stream not in yet
};

}  // namespace tl::reduce
