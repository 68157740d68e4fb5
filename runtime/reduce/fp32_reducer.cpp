#include <ATen/ATen.h>

#include "common/check.h"
#include "runtime/foreach.h"
#include "runtime/reduce/bucket_launches.h"
#include "runtime/reduce/gradient_reducer.h"

namespace tl::reduce {
namespace {

// A flat buffer holding several gradients back to back, reduced with one collective.
struct Fp32Bucket {
  at::Tensor flat;
  std::vector<size_t> members;   // parameter indices
  std::vector<int64_t> offsets;  // element offset of each member in `flat`
};

class Fp32Reducer final : public GradientReducer {
 public:
  Fp32Reducer(comm::Communicator& comm, const std::vector<at::Tensor>& params, int64_t bucketBytes)
      : comm_(comm) {
    TL_CHECK(!params.empty(), "no parameters to reduce");
    shapes_.reserve(params.size());
    for (const auto& p : params) shapes_.push_back(p.sizes().vec());
    slots_.resize(params.size());
    // Reverse parameter order, as DDP does: the last layers' gradients are ready first.
    Fp32Bucket current;
    int64_t currentElems = 0;
    const int64_t limit = std::max<int64_t>(1, bucketBytes / int64_t(sizeof(float)));
    auto close = [&] {
      if (current.members.empty()) return;
      current.flat = at::zeros({currentElems}, params[current.members[0]].options().dtype(at::kFloat));
      buckets_.push_back(std::move(current));
      current = Fp32Bucket{};
      currentElems = 0;
    };
    for (size_t k = params.size(); k-- > 0;) {
      int64_t n = params[k].numel();
      if (currentElems > 0 && currentElems + n > limit) close();
      slots_[k] = {buckets_.size(), current.offsets.size()};
      current.members.push_back(k);
      current.offsets.push_back(currentElems);
      currentElems += n;
    }
    close();
    std::vector<size_t> bucketOf;
    for (const auto& s : slots_) bucketOf.push_back(s.first);
    // fp32 promises no bits across placements, so any fixed order of the float additions will
    // do: over MPI the buckets take the ring (2(N-1)/N of a bucket per member, chunks pipelined)
    // at every size, not MPI_Iallreduce's binomial tree, which took ~2x as long.
    comm::CollectiveOptions anyOrder;
    anyOrder.anyFixedOrder = true;
    launches_ = std::make_unique<BucketLaunches>(
        std::move(bucketOf), buckets_.size(), [this, anyOrder](size_t b) {
          // One process: the bucket holds the sum already. No collective, and on a GPU no wait for
          // the device in the middle of the step.
          if (comm_.size() == 1) return std::unique_ptr<comm::PendingCollective>();
          return comm_.startAllreduce(buckets_[b].flat, comm::ReduceOp::Sum, anyOrder);
        });
  }

  std::string mode() const override { return "fp32"; }

  void beginStep() override {
    contributions_ = 0;
    launches_->reset();
  }

  void addContribution(const std::vector<at::Tensor>& grads) override {
    TL_CHECK_EQ(grads.size(), shapes_.size(), "gradient count differs from parameter count");
    for (auto& b : buckets_) {
      for (size_t m = 0; m < b.members.size(); ++m) {
        if (!launches_->streamed(b.members[m])) add(b, m, grads[b.members[m]]);
      }
    }
    ++contributions_;
    if (launches_->streaming()) launches_->endStream();
  }

  void streamContribution() override { launches_->beginStream(); }

  void addGradient(size_t t, const at::Tensor& grad) override {
    launches_->checkStreamable(t);
    add(buckets_[slots_[t].first], slots_[t].second, grad);
    launches_->add(t);
  }

  std::vector<std::chrono::steady_clock::time_point> bucketStartTimes() const override {
    return launches_->startTimes();
  }

  bool finish(std::vector<at::Tensor>& out, int64_t totalContributions) override {
    TL_CHECK_GT(totalContributions, 0);
    TL_CHECK_EQ(out.size(), shapes_.size());
    if (contributions_ == 0) {
      for (auto& b : buckets_) b.flat.zero_();  // a process with no local worker still joins
    }
    const double scale = 1.0 / double(totalContributions);
    launches_->startAll();
    for (size_t i = 0; i < buckets_.size(); ++i) {
      Fp32Bucket& b = buckets_[i];
      launches_->wait(i);
      b.flat.mul_(scale);
      std::vector<at::Tensor> dst, src;  // one launch for the bucket where libtorch can
      for (size_t m = 0; m < b.members.size(); ++m) {
        dst.push_back(out[b.members[m]]);
        src.push_back(b.flat.narrow(0, b.offsets[m], dst.back().numel()).view(dst.back().sizes()));
      }
      copyEach(dst, src);
    }
    return true;
  }

 private:
  // Member m of bucket b, the gradient `g` of the current contribution: summed in contribution
  // order, whenever it arrives.
  void add(Fp32Bucket& b, size_t m, const at::Tensor& g) {
    auto slot = b.flat.narrow(0, b.offsets[m], g.numel());
    if (contributions_ == 0) slot.copy_(g.reshape({-1}));
    else slot.add_(g.reshape({-1}));
  }

  comm::Communicator& comm_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<Fp32Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> slots_;  // per parameter: (bucket, member)
  std::unique_ptr<BucketLaunches> launches_;
  int64_t contributions_ = 0;
};

}  // namespace

std::unique_ptr<GradientReducer> createFp32Reducer(comm::Communicator& comm,
                                                   const std::vector<at::Tensor>& params,
                                                   int64_t bucketBytes) {
  return std::make_unique<Fp32Reducer>(comm, params, bucketBytes);
}

}  // namespace tl::reduce
