// "--reduction exact": a mean of gradients whose bits do not depend on how the N contributions
// are placed on processes, nor on the collective's algorithm (DESIGN.md, consistency contract,
// point 6). Arithmetic in fixed_point.h; this file holds the protocol.
//
// Per parameter tensor t the reducer keeps a scale 2^e_t, the same on every process because it
// is derived only from global quantities. A step:
//   addContribution: one fused pass per tensor quantises the gradient into the int64 bucket
//     that accumulates this process's contributions, and records max |g|.
//   The int64 Sum reduce-scatter of each bucket (exact: the sums do not depend on when or in
//     which order they are taken), started when the last local contribution has filled the
//     bucket (streamed: while backward still runs), or in finish. Each process then holds the
//     global sums of its segment of the bucket (comm::segmentOf).
//   finish: one small max-allreduce of the per-tensor maxima, started behind the bucket sums;
//     waits for it (and so for the sums before it), then decides. If
//     some tensor's values left the scale's range (overflow), or would keep too few bits
//     (gradients shrank by 2^16), or no scale exists yet (first step), the sums are dropped,
//     every process sets e_t from the step's global maxima and asks for a replay; the replayed
//     contributions are bit-identical, so the replay always fits. Otherwise, bucket by bucket:
//     one correctly rounded division per element of this process's segment, into float32
//     means, then an allgather of the means' segments (started as soon as the bucket's
//     segment is converted, so that it overlaps the later buckets' sums); the step's maxima
//     set the next step's scales.
//   The sums come before the maxima so that they can start during backward; a replayed step
//   pays for sums it drops, but not for allgathers.
// The mean is a function of the integer sum and the tensor's scale alone (fixed_point.h), so a
// process converting a segment gets the bits every process would: the reduce-scatter path gives
// the bits of the int64 allreduce (ExactCollectives::Allreduce, kept to compare against), for
// 12 bytes moved per element instead of 16; between hosts the MPI ring moves the sums in a
// compact lossless encoding (comm::CollectiveOptions::compactIntegers; about half of int64's
// bytes), so about 8. The decision to replay reads only the maxima, never
// the sums, so it needs nothing from the segments. A communicator of one process starts no
// collective at all: its buckets and maxima are the job's already.
// Every decision depends on global values only, so all processes take the same branch.
//
// On a GPU (any device but the CPU) the batched path of fixed_point.h quantises a whole bucket
// at a time and keeps the maxima on the device; the host reads them once a step, for the
// maxima's collective. A non-finite gradient is then reported by every process after that
// collective instead of by the process that met it.
//
// The buckets' layout and the batched path's means are in exact_buckets.{h,cpp}.
//
// Memory: one int64 per parameter element, whatever the number of local contributions (and on
// a device one float32 for the means).
// Threading: used from the training thread only, like the communicator.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/check.h"
#include "runtime/reduce/bucket_launches.h"
#include "runtime/reduce/exact_buckets.h"
#include "runtime/reduce/exact_reducer_state.h"
#include "runtime/reduce/fixed_point.h"
#include "runtime/reduce/gradient_reducer.h"

namespace tl::reduce {
namespace {

// One would do (a replay's identical recomputation fits its scales); a few tolerate a
// recomputation that differs only slightly.
constexpr int64_t kMaxConsecutiveReplays = 4;

bool rawCpuFloat(const at::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
}


class ExactReducer final : public GradientReducer {
 public:
  ExactReducer(comm::Communicator& comm, const std::vector<at::Tensor>& params,
               std::vector<std::string> names, int64_t bucketBytes, ExactCollectives collectives,
               ExactKernels kernels)
      : comm_(comm), names_(std::move(names)),
        segmented_(collectives == ExactCollectives::ReduceScatter && comm.size() > 1),
        batched_(kernels == ExactKernels::Batched || (!params.empty() && !params[0].device().is_cpu())) {
    TL_CHECK(!params.empty(), "no parameters to reduce");
    TL_CHECK_EQ(names_.size(), params.size(), "one name per parameter");
    for (size_t t = 0; t < params.size(); ++t) {
      TL_CHECK_EQ(params[t].scalar_type(), at::kFloat, "the exact reduction handles float32 "
                  "parameters; parameter '", names_[t], "' is not");
      shapes_.push_back(params[t].sizes().vec());
    }
    state_.exponents.assign(params.size(), 0);
    state_.maxAbs.assign(params.size(), 0.0);
    localMaxBits_.assign(params.size(), 0);
    buckets_ = exact::layBuckets(params, bucketBytes, /*withMeans=*/segmented_ || batched_, slots_);
    if (batched_) {
      maxBitsOnDevice_ = at::zeros({int64_t(params.size())}, params[0].options().dtype(at::kInt));
      for (const exact::Bucket& b : buckets_) {
        for (size_t m = 0; m < b.members.size(); ++m) memberPosition_[b.members[m]] = b.firstMember + m;
      }
      dropHeldGradients();
    }
    std::vector<size_t> bucketOf;
    for (const exact::Slot& s : slots_) bucketOf.push_back(s.bucket);
    launches_ =
        std::make_unique<BucketLaunches>(std::move(bucketOf), buckets_.size(), [this](size_t b) {
          // One process: the bucket holds the sums already (no collective, no wait for a device).
          if (comm_.size() == 1) return std::unique_ptr<comm::PendingCollective>();
          // The sums carry far fewer significant bits than 64: they may travel compact.
          comm::CollectiveOptions compact;
          compact.compactIntegers = true;
          return segmented_ ? comm_.startReduceScatter(buckets_[b].sums, compact)
                            : comm_.startAllreduce(buckets_[b].sums, comm::ReduceOp::Sum, compact);
        });
  }

  std::string mode() const override { return "exact"; }

  void beginStep() override {
    contributions_ = 0;
    std::fill(localMaxBits_.begin(), localMaxBits_.end(), 0u);
    if (batched_) maxBitsOnDevice_.zero_();
    launches_->reset();
    dropHeldGradients();
  }

  void addContribution(const std::vector<at::Tensor>& grads) override {
    TL_CHECK_EQ(grads.size(), shapes_.size(), "gradient count differs from parameter count");
    if (batched_) {
      for (size_t index = 0; index < buckets_.size(); ++index) quantiseBucket(index, grads);
      dropHeldGradients();
    } else {
      for (size_t t = 0; t < grads.size(); ++t) {
        if (!launches_->streamed(t)) quantise(t, grads[t]);
      }
    }
    ++contributions_;
    if (launches_->streaming()) launches_->endStream();
  }

  void streamContribution() override {
    launches_->beginStream();
    dropHeldGradients();
  }

  void addGradient(size_t t, const at::Tensor& grad) override {
    launches_->checkStreamable(t, batched_ && t < held_.size() && held_[t].defined());
    if (!batched_) {
      quantise(t, grad);
      launches_->add(t);
      return;
    }
    // The batched path holds a bucket's gradients until the bucket is complete, then quantises
    // them in one call and hands them to the launches together (when its collective may start
    // anyway). Ones still held when the contribution ends count as not streamed: addContribution
    // quantises them with the rest.
    checkGradient(t, grad, accumulator(t));
    held_[t] = grad;
    const size_t index = slots_[t].bucket;
    const exact::Bucket& b = buckets_[index];
    if (++heldInBucket_[index] < b.members.size()) return;
    std::vector<at::Tensor> grads(shapes_.size());
    for (size_t member : b.members) grads[member] = held_[member];
    quantiseBucket(index, grads);
    for (size_t member : b.members) {
      held_[member] = at::Tensor();
      launches_->add(member);
    }
    heldInBucket_[index] = 0;
  }

  void dropHeldGradients() {
    if (!batched_) return;
    held_.assign(shapes_.size(), at::Tensor());
    heldInBucket_.assign(buckets_.size(), 0);
  }

  std::vector<std::chrono::steady_clock::time_point> bucketStartTimes() const override {
    return launches_->startTimes();
  }

  bool finish(std::vector<at::Tensor>& out, int64_t totalContributions) override {
    TL_CHECK_GT(totalContributions, 0);
    TL_CHECK_LE(totalContributions, fixed::kMaxContributions);
    TL_CHECK_LE(contributions_, totalContributions);
    TL_CHECK_EQ(out.size(), shapes_.size());
    for (size_t t = 0; t < out.size(); ++t) {  // before finish's collectives: a throw must not strand peers
      TL_CHECK(out[t].sizes() == at::IntArrayRef(shapes_[t]), "output for '", names_[t], "'");
      TL_CHECK_EQ(out[t].scalar_type(), at::kFloat, "output for '", names_[t], "'");
    }
    if (contributions_ == 0) {
      for (auto& b : buckets_) b.sums.zero_();  // a process with no local worker still joins
    }
    launches_->startAll();
    // The maxima's small collective goes behind the sums, so that its latency hides in theirs.
    std::unique_ptr<comm::PendingCollective> maxima;
    at::Tensor maximaPayload = startAgreeingOnMaxima(maxima);
    if (!segmented_) launches_->waitAll();
    const std::vector<double> globalMax = agreeOnMaxima(maximaPayload, maxima.get());
    for (size_t t = 0; t < shapes_.size(); ++t) {
      if (!std::isfinite(globalMax[t])) {  // a process of the batched path met it
        launches_->waitAll();  // a sum abandoned unfinished would fail the communicator
        throw Error(str("non-finite gradient (", std::isnan(globalMax[t]) ? "NaN" : "Inf",
                        ") in parameter '", names_[t], "'"));
      }
    }

    bool replay = !state_.scalesKnown;
    for (size_t t = 0; t < shapes_.size() && !replay; ++t) {
      replay = fixed::checkFit(globalMax[t], state_.exponents[t], totalContributions) != fixed::Fit::Ok;
    }
    if (replay) {
      // Identical recomputed contributions always fit the scales set here, so a second replay
      // in a row means they were not identical (non-deterministic forward/backward).
      TL_CHECK_LT(consecutiveReplays_, kMaxConsecutiveReplays, "exact reduction: the step was "
                  "replayed again and again; the recomputed gradients must be bit-identical");
      launches_->waitAll();  // a sum abandoned unfinished would fail the communicator
      rescale(globalMax, totalContributions);
      ++replays_;
      ++consecutiveReplays_;
      return false;
    }
    consecutiveReplays_ = 0;

    if (segmented_) {
      meansFromSegments(out, globalMax, totalContributions);
      rescale(globalMax, totalContributions);
      return true;
    }
    for (auto& b : buckets_) {
      if (batched_) {
        exact::meansOfBucket(b, 0, b.sums.numel(), globalMax, state_.exponents, totalContributions);
        exact::copyMeansOut(b, out);
        continue;
      }
      for (size_t m = 0; m < b.members.size(); ++m) {
        const size_t t = b.members[m];
        at::Tensor& dst = out[t];
        at::Tensor sums = b.sums.narrow(0, b.offsets[m], dst.numel());
        if (rawCpuFloat(dst) && sums.device().is_cpu()) {
          fixed::dequantiseMean(sums.data_ptr<int64_t>(), dst.data_ptr<float>(), dst.numel(),
                                totalContributions, state_.exponents[t]);
        } else {
          fixed::dequantiseMean(sums, dst, totalContributions, state_.exponents[t]);
        }
      }
    }
    rescale(globalMax, totalContributions);
    return true;
  }

  int64_t replays() const override { return replays_; }

  std::vector<std::pair<std::string, at::Tensor>> state() const override {
    return state_.toNamedTensors();
  }

  void loadState(const std::vector<std::pair<std::string, at::Tensor>>& named) override {
    state_ = ExactReducerState::fromNamedTensors(named, shapes_.size());
  }

 private:
  fixed::Accumulate accumulateMode() const {
    using fixed::Accumulate;
    return !state_.scalesKnown ? Accumulate::MaxOnly : contributions_ == 0 ? Accumulate::Store : Accumulate::Add;
  }

  void checkGradient(size_t t, const at::Tensor& g, const at::Tensor& acc) const {
    TL_CHECK(g.sizes() == at::IntArrayRef(shapes_[t]), "gradient of '", names_[t], "' has shape ",
             g.sizes(), ", the parameter ", at::IntArrayRef(shapes_[t]));
    TL_CHECK_EQ(g.scalar_type(), at::kFloat, "gradient of '", names_[t], "'");
    TL_CHECK(g.device() == acc.device(), "gradient of '", names_[t], "' is on ", g.device(),
             ", the parameter on ", acc.device());
  }

  // The batched path: bucket `index`'s tensors of the current contribution (those not streamed
  // already), all in one call when the whole bucket is there. Its maxima stay on the device.
  void quantiseBucket(size_t index, const std::vector<at::Tensor>& grads) {
    const exact::Bucket& b = buckets_[index];
    std::vector<size_t> present;
    for (size_t m = 0; m < b.members.size(); ++m) {
      if (!launches_->streamed(b.members[m])) present.push_back(m);
    }
    if (present.size() < b.members.size()) {
      for (size_t m : present) quantiseOnDevice(b.members[m], grads[b.members[m]]);
      return;
    }
    std::vector<at::Tensor> members;
    std::vector<int> exponents;
    for (size_t m = 0; m < b.members.size(); ++m) {
      const size_t t = b.members[m];
      checkGradient(t, grads[t], b.sums);
      if (grads[t].numel() == 0) {  // nothing to add; quantiseMany takes no empty tensors
        for (size_t k : present) quantiseOnDevice(b.members[k], grads[b.members[k]]);
        return;
      }
      members.push_back(grads[t]);
      exponents.push_back(state_.exponents[t]);
    }
    fixed::quantiseMany(members, b.sums, exponents, accumulateMode(),
                        maxBitsOnDevice_.narrow(0, int64_t(b.firstMember), int64_t(b.members.size())));
  }

  // One tensor by the batched path (streamed, or a bucket seen in part).
  void quantiseOnDevice(size_t t, const at::Tensor& g) {
    at::Tensor acc = accumulator(t);
    checkGradient(t, g, acc);
    if (g.numel() == 0) return;
    fixed::quantiseMany({g}, acc, {state_.exponents[t]}, accumulateMode(),
                        maxBitsOnDevice_.narrow(0, int64_t(memberPosition_.at(t)), 1));
  }

  // Tensor t of the current contribution into its bucket (the CPU loops' path; the batched
  // path goes through quantiseBucket); its max |g| into this step's maxima.
  void quantise(size_t t, const at::Tensor& g) {
    using fixed::Accumulate;
    const Accumulate mode = accumulateMode();
    at::Tensor acc = accumulator(t);
    checkGradient(t, g, acc);
    const uint32_t maxBits =
        rawCpuFloat(g) ? fixed::quantise(g.data_ptr<float>(), acc.data_ptr<int64_t>(), g.numel(),
                                         state_.exponents[t], mode)
                       : fixed::quantise(g, acc, state_.exponents[t], mode);
    if (maxBits >= fixed::kInfBits) {
      throw Error(str("non-finite gradient (", maxBits > fixed::kInfBits ? "NaN" : "Inf",
                      ") in parameter '", names_[t], "'"));
    }
    localMaxBits_[t] = std::max(localMaxBits_[t], maxBits);
  }

  at::Tensor accumulator(size_t t) {
    const exact::Slot& s = slots_[t];
    int64_t n = 1;
    for (int64_t d : shapes_[t]) n *= d;
    return buckets_[s.bucket].sums.narrow(0, s.offset, n);
  }

  // One max-allreduce: the global max |g| per tensor, plus a check that every process holds
  // the same scales (a checkpoint loaded on some processes only would silently break the bits).
  // Started here, finished by agreeOnMaxima.
  at::Tensor startAgreeingOnMaxima(std::unique_ptr<comm::PendingCollective>& pending) {
    const size_t count = shapes_.size();
    if (batched_) {  // the host's one wait for the device in a step
      const at::Tensor onHost = maxBitsOnDevice_.cpu();
      const int32_t* bits = onHost.data_ptr<int32_t>();
      for (size_t t = 0; t < count; ++t) localMaxBits_[t] = uint32_t(bits[memberPosition_.at(t)]);
    }
    at::Tensor payload = at::empty({int64_t(3 * count + 2)}, at::kDouble);
    double* p = payload.data_ptr<double>();
    for (size_t t = 0; t < count; ++t) {
      // As bits (exact in a double), whose order is the magnitudes' with NaN above Inf: the
      // maximum keeps a NaN, which a maximum of float values might drop.
      p[t] = double(localMaxBits_[t]);
      p[count + t] = state_.exponents[t];
      p[2 * count + t] = -state_.exponents[t];
    }
    p[3 * count] = state_.scalesKnown ? 1 : 0;
    p[3 * count + 1] = state_.scalesKnown ? -1 : 0;
    if (comm_.size() == 1)
      return payload;  // its own maxima are the job's: no round trip to the device
    at::Tensor onDevice = payload.to(buckets_[0].sums.device());
    pending = comm_.startAllreduce(onDevice, comm::ReduceOp::Max);
    return onDevice;
  }

  std::vector<double> agreeOnMaxima(const at::Tensor& onDevice, comm::PendingCollective* pending) {
    if (pending != nullptr) pending->wait();  // none on a communicator of one process
    const size_t count = shapes_.size();
    at::Tensor payload = onDevice.cpu();
    const double* p = payload.data_ptr<double>();
    TL_CHECK(p[3 * count] == -p[3 * count + 1], "exact reducer: some processes have scales and "
             "others not; their reducer state differs");
    for (size_t t = 0; t < count; ++t) {
      TL_CHECK(p[count + t] == -p[2 * count + t], "exact reducer: processes use different scales "
               "for parameter '", names_[t], "' (exponents ", -p[2 * count + t], "..", p[count + t],
               "); their reducer state differs");
    }
    std::vector<double> maxima(count);
    for (size_t t = 0; t < count; ++t) maxima[t] = double(fixed::magnitudeFromBits(uint32_t(p[t])));
    return maxima;
  }

  void rescale(const std::vector<double>& globalMax, int64_t totalContributions) {
    for (size_t t = 0; t < shapes_.size(); ++t) {
      if (globalMax[t] > 0) {
        state_.exponents[t] = fixed::scaleExponent(globalMax[t], totalContributions);
      } else if (!state_.scalesKnown) {
        state_.exponents[t] = fixed::scaleExponent(1.0, totalContributions);  // all zero so far
      }  // else: an all-zero step keeps the scale that fitted before
      state_.maxAbs[t] = globalMax[t];
    }
    state_.scalesKnown = true;
  }

  // The reduce-scatter path's end of finish(): for each bucket in order, waits for its sums,
  // converts this process's segment into means and starts the means' allgather; then waits
  // for the allgathers and copies the means out. Every process starts the same collectives in
  // the same order.
  void meansFromSegments(std::vector<at::Tensor>& out, const std::vector<double>& globalMax,
                         int64_t totalContributions) {
    std::vector<std::unique_ptr<comm::PendingCollective>> gathers;
    for (size_t index = 0; index < buckets_.size(); ++index) {
      exact::Bucket& b = buckets_[index];
      launches_->wait(index);
      const comm::Segment mine = comm::segmentOf(b.sums.numel(), comm_.size(), comm_.rank());
      for (size_t m = 0; m < b.members.size(); ++m) {
        const size_t t = b.members[m];
        const int64_t begin = std::max(mine.offset, b.offsets[m]);
        const int64_t end = std::min(mine.offset + mine.length, b.offsets[m] + out[t].numel());
        if (begin >= end) continue;
        if (batched_) continue;
        const at::Tensor sums = b.sums.narrow(0, begin, end - begin);
        const at::Tensor means = b.means.narrow(0, begin, end - begin);
        if (sums.device().is_cpu()) {
          fixed::dequantiseMean(sums.data_ptr<int64_t>(), means.data_ptr<float>(), sums.numel(),
                                totalContributions, state_.exponents[t]);
        } else {
          fixed::dequantiseMean(sums, means, totalContributions, state_.exponents[t]);
        }
      }
      if (batched_) {
        exact::meansOfBucket(b, mine.offset, mine.offset + mine.length, globalMax, state_.exponents,
                             totalContributions);
      }
      gathers.push_back(comm_.startAllgatherSegments(b.means));
    }
    for (size_t index = 0; index < buckets_.size(); ++index) {
      gathers[index]->wait();
      exact::copyMeansOut(buckets_[index], out);
    }
  }

  comm::Communicator& comm_;
  std::vector<std::string> names_;
  const bool segmented_;  // reduce-scatter of the sums, allgather of the means
  const bool batched_;    // fixed_point.h's batched path (device tensors), maxima on the device
  at::Tensor maxBitsOnDevice_;                  // int32 per parameter, in member order (batched)
  std::map<size_t, size_t> memberPosition_;     // parameter index -> position in member order
  std::vector<at::Tensor> held_;                // batched, streamed: gradients of incomplete buckets
  std::vector<size_t> heldInBucket_;            // how many each bucket holds
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<exact::Bucket> buckets_;
  std::vector<exact::Slot> slots_;
  std::unique_ptr<BucketLaunches> launches_;
  ExactReducerState state_;  // checkpointed: what later steps depend on
  // Per step.
  std::vector<uint32_t> localMaxBits_;
  int64_t contributions_ = 0;
  int64_t replays_ = 0;
  int64_t consecutiveReplays_ = 0;
};

}  // namespace

std::unique_ptr<GradientReducer> createExactReducer(comm::Communicator& comm,
                                                    const std::vector<at::Tensor>& params,
                                                    std::vector<std::string> paramNames,
                                                    int64_t bucketBytes,
                                                    ExactCollectives collectives,
                                                    ExactKernels kernels) {
  return std::make_unique<ExactReducer>(comm, params, std::move(paramNames), bucketBytes,
                                        collectives, kernels);
}

}  // namespace tl::reduce
