#include "runtime/usage/counting_communicator.h"

#include <time.h>

namespace tl::usage {
namespace {

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

int64_t bytesOf(const at::Tensor& t) { return t.defined() ? int64_t(t.numel()) * int64_t(t.element_size()) : 0; }

class CountedPending final : public comm::PendingCollective {
 public:
  CountedPending(std::unique_ptr<comm::PendingCollective> inner, TrafficLog& log, TrafficBytes bytes,
                 double start, double cpuSeconds)
      : inner_(std::move(inner)), log_(log), bytes_(bytes), start_(start), cpu_(cpuSeconds) {}
  bool test() override { return measured([&] { return inner_->test(); }); }
  void wait() override {
    measured([&] {
      inner_->wait();
      return true;
    });
  }

 private:
  template <typename Call>
  bool measured(Call&& call) {
    if (recorded_) return call();
    const double cpu0 = threadCpuSeconds();
    const bool done = call();
    cpu_ += threadCpuSeconds() - cpu0;
    if (done) {
      recorded_ = true;
      log_.add(TrafficEvent{start_, now(), bytes_.sent, bytes_.received}, cpu_);
    }
    return done;
  }

  std::unique_ptr<comm::PendingCollective> inner_;
  TrafficLog& log_;
  TrafficBytes bytes_;
  double start_;
  double cpu_;
  bool recorded_ = false;
};

class CountingCommunicator final : public comm::Communicator {
 public:
  CountingCommunicator(comm::Communicator& inner, TrafficLog& log, std::unique_ptr<comm::Communicator> owned = {})
      : owned_(std::move(owned)), inner_(inner), log_(log) {
    setTimeout(inner.timeout());
  }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }

  void allreduce(at::Tensor& tensor, comm::ReduceOp op, const comm::CollectiveOptions& options) override {
    timed(allreduceBytes(bytesOf(tensor), size()), [&] { inner_.allreduce(tensor, op, withTimeout(options)); });
  }
  // A started allreduce (overlapped buckets) stays started: forwarded, and recorded from its start
  // to the first test() or wait() that finds it complete.
  std::unique_ptr<comm::PendingCollective> startAllreduce(at::Tensor& tensor, comm::ReduceOp op,
                                                          const comm::CollectiveOptions& options) override {
    const double start = now();
    const double cpu0 = threadCpuSeconds();
    auto inner = inner_.startAllreduce(tensor, op, withTimeout(options));
    return std::make_unique<CountedPending>(std::move(inner), log_, allreduceBytes(bytesOf(tensor), size()),
                                            start, threadCpuSeconds() - cpu0);
  }
  std::unique_ptr<comm::PendingCollective> startReduceScatter(at::Tensor& tensor,
                                                              const comm::CollectiveOptions& options) override {
    return started(halfRingBytes(bytesOf(tensor), size()),
                   [&] { return inner_.startReduceScatter(tensor, withTimeout(options)); });
  }
  std::unique_ptr<comm::PendingCollective> startAllgatherSegments(
      at::Tensor& tensor, const comm::CollectiveOptions& options) override {
    return started(halfRingBytes(bytesOf(tensor), size()),
                   [&] { return inner_.startAllgatherSegments(tensor, withTimeout(options)); });
  }
  void broadcast(at::Tensor& tensor, int root, const comm::CollectiveOptions& options) override {
    timed(broadcastBytes(bytesOf(tensor), size(), root == rank()),
          [&] { inner_.broadcast(tensor, root, withTimeout(options)); });
  }
  at::Tensor allgather(const at::Tensor& tensor, const comm::CollectiveOptions& options) override {
    at::Tensor out;
    timed(allgatherBytes(bytesOf(tensor), size()), [&] { out = inner_.allgather(tensor, withTimeout(options)); });
    return out;
  }
  void barrier(const comm::CollectiveOptions& options) override { inner_.barrier(withTimeout(options)); }
  // Point-to-point (a grow's replica from several senders): the bytes this member sends or takes.
  bool pointToPoint() const override { return inner_.pointToPoint(); }
  std::unique_ptr<comm::PendingCollective> startSend(const at::Tensor& tensor, int peer, int tag,
                                                     const comm::CollectiveOptions& options) override {
    return started(TrafficBytes{bytesOf(tensor), 0},
                   [&] { return inner_.startSend(tensor, peer, tag, withTimeout(options)); });
  }
  std::unique_ptr<comm::PendingCollective> startReceive(at::Tensor& tensor, int peer, int tag,
                                                        const comm::CollectiveOptions& options) override {
    return started(TrafficBytes{0, bytesOf(tensor)},
                   [&] { return inner_.startReceive(tensor, peer, tag, withTimeout(options)); });
  }
  std::unique_ptr<comm::Communicator> split(int color, int key, const comm::CollectiveOptions& options) override {
    auto part = inner_.split(color, key, withTimeout(options));
    if (!part) return nullptr;
    comm::Communicator& ref = *part;
    return std::make_unique<CountingCommunicator>(ref, log_, std::move(part));
  }

 private:
  // The wrapper's own deadline applies when the call gives none (a job sets it on the wrapper).
  comm::CollectiveOptions withTimeout(const comm::CollectiveOptions& options) const {
    comm::CollectiveOptions o = options;
    o.timeout = timeoutFor(options);
    return o;
  }

  // A started collective, recorded from its start to the first test() or wait() that finds it
  // complete.
  template <typename Start>
  std::unique_ptr<comm::PendingCollective> started(TrafficBytes bytes, Start&& start) {
    const double begin = now();
    const double cpu0 = threadCpuSeconds();
    auto inner = start();
    return std::make_unique<CountedPending>(std::move(inner), log_, bytes, begin, threadCpuSeconds() - cpu0);
  }

  template <typename Call>
  void timed(TrafficBytes bytes, Call&& call) {
    TrafficEvent e;
    e.start = now();
    const double cpu0 = threadCpuSeconds();
    call();
    e.end = now();
    e.sent = bytes.sent;
    e.received = bytes.received;
    log_.add(e, threadCpuSeconds() - cpu0);
  }

  std::unique_ptr<comm::Communicator> owned_;
  comm::Communicator& inner_;
  TrafficLog& log_;
};

}  // namespace

std::unique_ptr<comm::Communicator> countTraffic(comm::Communicator& inner, TrafficLog& log) {
  return std::make_unique<CountingCommunicator>(inner, log);
}

}  // namespace tl::usage
