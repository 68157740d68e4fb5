// Cost of the exact (placement-independent) gradient reduction against the fp32 one, on
// ResNet-18's gradients (11.2M floats), and as a share of a ResNet-18 CIFAR training step
// (batch 32, one compute thread) measured in the same run; then the transport alone: the tl
// communicator against a blocking MPI_Allreduce of the same buffer (and against tl's previous
// transport, MPI_Iallreduce) for 1, 4 and 25 MiB and for ResNet-18's gradients in 25 MiB
// buckets. Configurations alternate within each round (forward, then backward order), and every
// figure is the median over rounds with its 95 % confidence interval. Run under `mpirun -np 2`.
//
//   bench_reduction [--reductions K] [--train-steps S] [--train-step-ms MS] [--rounds R]
//                   [--ring-chunk-kib C]
//
// --reductions: rounds of the reduction table; --rounds: rounds of the transport tables.
// --ring-chunk-kib: the ring's chunk (MpiCommunicatorOptions::ringChunkBytes), to tune it.
// --train-step-ms skips the training-step measurement and uses the given time instead.
#include <ATen/ATen.h>
#include <mpi.h>
#include <ATen/Parallel.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <functional>
#include <limits>
#include <vector>

#include "bench/bench_stats.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/models/model.h"
#include "runtime/optim/optimizer.h"
#include "runtime/reduce/gradient_reducer.h"
#include "runtime/train/step.h"

namespace {

using Clock = std::chrono::steady_clock;
using tl::bench::MedianCi;
using tl::bench::medianWithCi;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Times each configuration once per round (after `warmups` unrecorded rounds), in the order
// roundOrder gives, after a barrier; times[c][round] in ms. `repeats` calls per measurement, so
// that short operations are timed over a few ms. Every process calls this with the same
// configurations (they hold collectives).
std::vector<std::vector<double>> timeInRounds(tl::comm::Communicator& comm,
                                              const std::vector<std::function<void()>>& configs,
                                              int rounds, int warmups, int repeats = 1) {
  std::vector<std::vector<double>> times(configs.size());
  for (int round = -warmups; round < rounds; ++round) {
    for (size_t c : tl::bench::roundOrder(configs.size(), size_t(round + warmups))) {
      comm.barrier();
      const auto t0 = Clock::now();
      for (int r = 0; r < repeats; ++r) configs[c]();
      if (round >= 0) times[c].push_back(msSince(t0) / repeats);
    }
  }
  return times;
}

// Per round a / b: paired, so load that hits the whole round cancels.
MedianCi ratioCi(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ratios;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) ratios.push_back(a[i] / b[i]);
  return medianWithCi(ratios);
}

// One whole reduction: every local contribution, then finish (again, if the exact mode's
// speculative scale asks for a replay).
void reduceOnce(tl::reduce::GradientReducer& reducer, const std::vector<at::Tensor>& grads,
                std::vector<at::Tensor>& out, int local, int64_t total) {
  bool done = false;
  while (!done) {
    reducer.beginStep();
    for (int w = 0; w < local; ++w) reducer.addContribution(grads);
    done = reducer.finish(out, total);
  }
}

// Allreduce of `buffers` in place: through a tl communicator, or a blocking MPI_Allreduce.
std::function<void()> allreduceThrough(tl::comm::Communicator* comm, std::vector<at::Tensor>& buffers) {
  if (comm) return [comm, &buffers] {
    for (auto& b : buffers) comm->allreduce(b, tl::comm::ReduceOp::Sum);
  };
  return [&buffers] {
    for (auto& b : buffers)
      MPI_Allreduce(MPI_IN_PLACE, b.data_ptr(), int(b.numel()),
                    b.scalar_type() == at::kFloat ? MPI_FLOAT : MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  };
}

// Every collective a no-op: the reducers' own work (copying or quantising, converting back)
// without any transport.
class NoTransportComm final : public tl::comm::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "none"; }
  void allreduce(at::Tensor&, tl::comm::ReduceOp, const tl::comm::CollectiveOptions&) override {}
  void broadcast(at::Tensor&, int, const tl::comm::CollectiveOptions&) override {}
  at::Tensor allgather(const at::Tensor& t, const tl::comm::CollectiveOptions&) override {
    return t.unsqueeze(0).clone();
  }
  void barrier(const tl::comm::CollectiveOptions&) override {}
  std::unique_ptr<tl::comm::Communicator> split(int, int, const tl::comm::CollectiveOptions&) override {
    return std::make_unique<NoTransportComm>();
  }
};

double timeTrainingStep(tl::models::Model& model, int steps) {
  tl::optim::OptimizerOptions oo;
  oo.name = "sgd";
  oo.lr = 0.01;
  oo.momentum = 0.9;
  auto opt = tl::optim::createOptimizer(oo, model.parameters());
  at::Tensor x = at::randn({32, 3, 32, 32});
  at::Tensor y = at::randint(0, 10, {32}, at::kLong);
  std::vector<double> times;
  for (int i = -1; i < steps; ++i) {
    const auto t0 = Clock::now();
    tl::train::forwardBackward(model, x, y);
    opt->step(0.01);
    if (i >= 0) times.push_back(msSince(t0));
  }
  return medianWithCi(times).median;
}

double flagValue(int argc, char** argv, const char* name, double fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atof(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  tl::comm::MpiSession session(&argc, &argv);
  tl::comm::MpiCommunicatorOptions ring;
  ring.ringChunkBytes = std::int64_t(flagValue(argc, argv, "--ring-chunk-kib", 1024) * 1024);
  auto comm = tl::comm::createMpiWorldCommunicator(ring);
  // tl's transport before the ring: every allreduce through MPI_Iallreduce.
  tl::comm::MpiCommunicatorOptions iallreduceOnly;
  iallreduceOnly.ringMinBytes = std::numeric_limits<std::int64_t>::max();
  auto iallreduceComm = tl::comm::createMpiWorldCommunicator(iallreduceOnly);
  const int repeats = int(flagValue(argc, argv, "--reductions", 11));
  const int rounds = int(flagValue(argc, argv, "--rounds", 15));
  const int trainSteps = int(flagValue(argc, argv, "--train-steps", 3));
  double stepMs = flagValue(argc, argv, "--train-step-ms", 0);
  at::set_num_threads(1);  // one compute thread per process, as in the training step
  const bool printer = comm->rank() == 0;

  torch::manual_seed(0);
  tl::models::ModelConfig mc;
  mc.arch = "resnet18";
  auto model = tl::models::createModel(mc);
  model->train();
  std::vector<at::Tensor> params;
  std::vector<std::string> names;
  for (const auto& item : model->named_parameters()) {
    names.push_back(item.key());
    params.push_back(item.value());
  }
  // Gradient-like values: a different magnitude per tensor, different values per process.
  at::manual_seed(1 + comm->rank());
  std::vector<at::Tensor> grads;
  int64_t elements = 0;
  for (size_t t = 0; t < params.size(); ++t) {
    grads.push_back(at::randn(params[t].sizes()).mul_(std::ldexp(1.0, -int(t % 12))));
    elements += params[t].numel();
  }

  if (stepMs <= 0) {
    comm->barrier();
    stepMs = timeTrainingStep(*model, trainSteps);  // every process at once, as in training
  }
  NoTransportComm alone;
  const int64_t bucketBytes = 25 << 20;
  std::vector<at::Tensor> out;
  for (const auto& g : grads) out.push_back(at::empty_like(g));

  if (printer) {
    std::printf("ResNet-18 gradients: %zu tensors, %.1fM floats; %d processes (MPI), 1 compute thread "
                "each; median [95 %% CI] over %d alternating rounds\n",
                params.size(), elements / 1e6, comm->size(), repeats);
    std::printf("training step (ResNet-18, CIFAR, batch 32, forward+backward+SGD): %.1f ms\n\n", stepMs);
    std::printf("%-6s %-6s %-24s %-24s %-28s\n", "local", "mode", "ms/reduction", "own work ms",
                "exact overhead of the step");
  }
  for (int local : {1, 4}) {
    const int64_t total = int64_t(local) * comm->size();
    auto fp32 = tl::reduce::createFp32Reducer(*comm, params, bucketBytes);
    auto exact = tl::reduce::createExactReducer(*comm, params, names, bucketBytes);
    auto fp32Alone = tl::reduce::createFp32Reducer(alone, params, bucketBytes);
    auto exactAlone = tl::reduce::createExactReducer(alone, params, names, bucketBytes);
    const auto withTransport = timeInRounds(
        *comm, {[&] { reduceOnce(*fp32, grads, out, local, total); },
                [&] { reduceOnce(*exact, grads, out, local, total); }},
        repeats, 2);  // two warm-up rounds (the exact mode's first replays)
    const auto ownWork = timeInRounds(
        *comm, {[&] { reduceOnce(*fp32Alone, grads, out, local, total); },
                [&] { reduceOnce(*exactAlone, grads, out, local, total); }},
        repeats, 2);
    // Overhead: the extra time per step over fp32, against the local workers' compute.
    std::vector<double> overhead;
    for (int r = 0; r < repeats; ++r)
      overhead.push_back((withTransport[1][r] - withTransport[0][r]) / (stepMs * local) * 100.0);
    if (printer) {
      const char* modes[] = {"fp32", "exact"};
      for (int m = 0; m < 2; ++m) {
        const std::string share = m == 0 ? "-" : tl::bench::formatCi(medianWithCi(overhead), "%.2f") + " %";
        std::printf("%-6d %-6s %-24s %-24s %-28s\n", local, modes[m],
                    tl::bench::formatCi(medianWithCi(withTransport[m]), "%.1f").c_str(),
                    tl::bench::formatCi(medianWithCi(ownWork[m]), "%.1f").c_str(), share.c_str());
      }
    }
  }
  if (printer)
    std::printf("\nlocal: contributions per process (logical workers); own work: the same reduction\n"
                "with no-op collectives; exact overhead: (exact - fp32 ms/reduction) / (training step\n"
                "ms x local), per round; target <= 1.5 %% with 1 local\n");

  // The transport alone: one buffer of each size, and the gradients in 25 MiB buckets.
  if (printer)
    std::printf("\ntransport: allreduce (sum, in place) ms, median [95 %% CI] over %d alternating rounds\n"
                "%-7s %-10s %-22s %-22s %-22s %-20s %-20s\n", rounds, "payload", "size",
                "tl communicator", "tl, MPI_Iallreduce", "MPI_Allreduce", "tl / MPI_Allreduce",
                "Iallreduce / MPI_A.");
  for (at::ScalarType dtype : {at::kFloat, at::kLong}) {
    const int64_t itemSize = int64_t(at::elementSize(dtype));
    struct Payload {
      std::string label;
      std::vector<at::Tensor> buffers;
    };
    std::vector<Payload> payloads;
    for (int mib : {1, 4, 25})
      payloads.push_back({std::to_string(mib) + " MiB", {at::zeros({(int64_t(mib) << 20) / itemSize}, dtype)}});
    Payload gradients{"RN18 grads", {}};
    for (int64_t done = 0, per = bucketBytes / itemSize; done < elements; done += per)
      gradients.buffers.push_back(at::zeros({std::min(per, elements - done)}, dtype));
    payloads.push_back(gradients);
    for (auto& p : payloads) {
      const int64_t bytes = p.buffers[0].nbytes();
      const int perRound = int(std::clamp<int64_t>((int64_t(16) << 20) / bytes, 1, 16));
      const auto t = timeInRounds(*comm,
                                  {allreduceThrough(comm.get(), p.buffers),
                                   allreduceThrough(iallreduceComm.get(), p.buffers),
                                   allreduceThrough(nullptr, p.buffers)},
                                  rounds, 1, perRound);
      if (printer)
        std::printf("%-7s %-10s %-22s %-22s %-22s %-20s %-20s\n",
                    dtype == at::kFloat ? "fp32" : "int64", p.label.c_str(),
                    tl::bench::formatCi(medianWithCi(t[0]), "%.2f").c_str(),
                    tl::bench::formatCi(medianWithCi(t[1]), "%.2f").c_str(),
                    tl::bench::formatCi(medianWithCi(t[2]), "%.2f").c_str(),
                    tl::bench::formatCi(ratioCi(t[0], t[2]), "%.2f").c_str(),
                    tl::bench::formatCi(ratioCi(t[1], t[2]), "%.2f").c_str());
    }
  }
  if (printer)
    std::printf("\ntl communicator: the ring for order-free sums (mpi_ring_allreduce.h); tl, MPI_Iallreduce:\n"
                "the same communicator with the ring off (tl's transport before it); ratios per round;\n"
                "RN18 grads: ResNet-18's gradients in 25 MiB buckets; target tl / MPI_Allreduce <= 1.1\n");
  return 0;
}
