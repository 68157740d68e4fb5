// Test support for the gradient reducers: a one-process communicator, synthetic gradients of
// N logical workers, and a driver that runs steps the way a trainer does (replays included).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/sha256.h"
#include "runtime/comm/communicator.h"
#include "runtime/reduce/gradient_reducer.h"

namespace tl::reduce::testing {

// A job of one process: every collective is the identity.
class SingleProcessComm final : public comm::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single-process"; }
  void allreduce(at::Tensor&, comm::ReduceOp, const comm::CollectiveOptions&) override { ++allreduces; }
  void broadcast(at::Tensor&, int, const comm::CollectiveOptions&) override {}
  at::Tensor allgather(const at::Tensor& t, const comm::CollectiveOptions&) override {
    return t.unsqueeze(0).clone();
  }
  void barrier(const comm::CollectiveOptions&) override {}
  std::unique_ptr<comm::Communicator> split(int color, int, const comm::CollectiveOptions&) override {
    return color < 0 ? nullptr : std::make_unique<SingleProcessComm>();
  }
  int64_t allreduces = 0;
};

// How gradients and outputs are laid out in memory: contiguous tensors take the reducer's raw
// CPU loops, strided views its generic ATen path. Both must give the same bits.
enum class Layout { Contiguous, Strided };

inline at::Tensor emptyLike(const std::vector<int64_t>& shape, Layout layout) {
  if (layout == Layout::Contiguous) return at::empty(shape, at::kFloat);
  std::vector<int64_t> wider = shape;
  wider.push_back(2);
  return at::empty(wider, at::kFloat).select(-1, 0);  // every other float: not contiguous
}

// Gradients of N logical workers over several steps, a pure function of (seed, step, worker,
// tensor). Magnitudes differ wildly between tensors, between workers and within a tensor, so a
// float sum depends on its order. Events exercise the exact reducer's scale protocol:
//   step 0: no scale yet (replay); step 2: tensor 2 grows 2^12 (beyond the headroom: replay);
//   step 3: tensor 3 shrinks 2^-20 (too coarse: replay); step 4: it grows back (replay).
// Tensor 1 is zero throughout.
struct SyntheticJob {
  int64_t workers = 4;
  int steps = 6;
  uint64_t seed = 1;
  std::vector<std::vector<int64_t>> shapes = {{1}, {7}, {10, 100}, {4099}, {3, 5, 7, 11}, {65537}, {101, 997}};

  static constexpr int64_t kExpectedReplays = 4;

  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (size_t t = 0; t < shapes.size(); ++t) n.push_back("layer" + std::to_string(t) + ".weight");
    return n;
  }

  std::vector<at::Tensor> params() const {
    std::vector<at::Tensor> p;
    for (const auto& s : shapes) p.push_back(at::zeros(s, at::kFloat));
    return p;
  }

  int tensorExponent(int step, size_t t) const {
    int e = 6 * int(t) - 20;
    if (t == 2 && step == 2) e += 12;
    if (t == 3 && step == 3) e -= 20;
    return e;
  }

  std::vector<at::Tensor> gradients(int step, int worker, Layout layout = Layout::Contiguous) const {
    std::vector<at::Tensor> grads;
    for (size_t t = 0; t < shapes.size(); ++t) {
      at::Tensor dense = at::zeros(shapes[t], at::kFloat);
      if (t != 1) {
        std::mt19937_64 rng(seed * 1000003u + uint64_t(step) * 7919u + uint64_t(worker) * 104729u + t);
        float* v = dense.data_ptr<float>();
        const int base = tensorExponent(step, t) + 3 * (worker % 3);
        for (int64_t i = 0; i < dense.numel(); ++i) {
          const uint64_t r = rng();
          const double mantissa = 1.0 + double(r >> 11 & 0xfffff) / double(1 << 20);
          const int exponent = base - int(r % 13);
          v[i] = float((r >> 63 ? -1.0 : 1.0) * std::ldexp(mantissa, exponent));
        }
      }
      at::Tensor g = emptyLike(shapes[t], layout);
      g.copy_(dense);
      grads.push_back(g);
    }
    return grads;
  }
};

struct RunResult {
  std::string sha256;   // of every output bit of every step
  int64_t replays = 0;  // finish() calls that returned false
  std::vector<std::vector<at::Tensor>> outputs;  // per step, when kept
};

// Runs the job's steps with this process holding `localWorkers`, as a trainer would: on a
// replay every local worker contributes again (bit-identical recomputation).
inline RunResult runJob(GradientReducer& reducer, const SyntheticJob& job,
                        const std::vector<int>& localWorkers, Layout layout = Layout::Contiguous,
                        bool keepOutputs = false) {
  RunResult result;
  Sha256 hash;
  for (int step = 0; step < job.steps; ++step) {
    std::vector<at::Tensor> out;
    for (const auto& s : job.shapes) out.push_back(emptyLike(s, layout).fill_(-7.0f));
    int attempts = 0;
    for (;; ++attempts) {
      TL_CHECK_LT(attempts, 3, "a replayed step must fit its new scales");
      reducer.beginStep();
      for (int w : localWorkers) reducer.addContribution(job.gradients(step, w, layout));
      if (reducer.finish(out, job.workers)) break;
      ++result.replays;
    }
    for (const auto& o : out) {
      at::Tensor c = o.contiguous();
      hash.update(c.data_ptr(), size_t(c.numel()) * sizeof(float));
    }
    if (keepOutputs) result.outputs.push_back(out);
  }
  result.sha256 = hash.hexDigest();
  return result;
}

inline std::vector<int> allWorkers(int64_t n) {
  std::vector<int> w;
  for (int i = 0; i < n; ++i) w.push_back(i);
  return w;
}

}  // namespace tl::reduce::testing
