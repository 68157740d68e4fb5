// Cost of the exact (placement-independent) gradient reduction against the fp32 one, on
// ResNet-18's gradients (11.2M floats), and as a share of a ResNet-18 CIFAR training step
// (batch 32, one compute thread) measured in the same run. Run under `mpirun -np 2`.
//
//   bench_reduction [--reductions K] [--train-steps S] [--train-step-ms MS]
//
// --train-step-ms skips the training-step measurement and uses the given time instead.
#include <ATen/ATen.h>
#include <mpi.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/models/model.h"
#include "runtime/optim/optimizer.h"
#include "runtime/reduce/gradient_reducer.h"
#include "runtime/train/step.h"

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct ReductionTimes {
  double contributeMs = 0;  // addContribution, per local contribution
  double finishMs = 0;      // finish: collectives and conversion back
  double totalMs = 0;       // one whole reduction (all local contributions + finish)
};

// Median times of `repeats` reductions of `local` contributions per process. Every process
// calls this with the same arguments (collectives inside).
ReductionTimes timeReduction(tl::reduce::GradientReducer& reducer, tl::comm::Communicator& comm,
                             const std::vector<at::Tensor>& grads, int local, int repeats) {
  std::vector<at::Tensor> out;
  for (const auto& g : grads) out.push_back(at::empty_like(g));
  std::vector<double> contribute, finish, total;
  for (int i = -2; i < repeats; ++i) {  // two warm-up rounds (the exact mode's first replays)
    comm.barrier();
    const auto t0 = Clock::now();
    bool done = false;
    double contributeMs = 0, finishMs = 0;
    while (!done) {
      reducer.beginStep();
      const auto c0 = Clock::now();
      for (int w = 0; w < local; ++w) reducer.addContribution(grads);
      contributeMs = msSince(c0) / local;
      const auto f0 = Clock::now();
      done = reducer.finish(out, int64_t(local) * comm.size());
      finishMs = msSince(f0);
    }
    if (i < 0) continue;
    total.push_back(msSince(t0));
    contribute.push_back(contributeMs);
    finish.push_back(finishMs);
  }
  return {median(contribute), median(finish), median(total)};
}

// Median ms of allreducing `elements` values of `dtype` in 25 MiB buckets, through the tl
// communicator or through blocking MPI_Allreduce: what the transport costs for each mode.
double timeTransport(tl::comm::Communicator& comm, int64_t elements, at::ScalarType dtype,
                     bool blockingMpi, int repeats) {
  const int64_t perBucket = (int64_t(25) << 20) / int64_t(at::elementSize(dtype));
  std::vector<at::Tensor> buckets;
  for (int64_t done = 0; done < elements; done += perBucket)
    buckets.push_back(at::ones({std::min(perBucket, elements - done)}, dtype));
  std::vector<double> times;
  for (int i = -1; i < repeats; ++i) {
    comm.barrier();
    const auto t0 = Clock::now();
    for (auto& b : buckets) {
      if (!blockingMpi) {
        comm.allreduce(b, tl::comm::ReduceOp::Sum);
      } else {
        MPI_Allreduce(MPI_IN_PLACE, b.data_ptr(), int(b.numel()),
                      dtype == at::kFloat ? MPI_FLOAT : MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      }
    }
    if (i >= 0) times.push_back(msSince(t0));
  }
  return median(times);
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
  return median(times);
}

double flagValue(int argc, char** argv, const char* name, double fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atof(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  tl::comm::MpiSession session(&argc, &argv);
  auto comm = tl::comm::createMpiWorldCommunicator();
  const int repeats = int(flagValue(argc, argv, "--reductions", 5));
  const int trainSteps = int(flagValue(argc, argv, "--train-steps", 3));
  double stepMs = flagValue(argc, argv, "--train-step-ms", 0);
  at::set_num_threads(1);  // one compute thread per process, as in the training step

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
  struct Row {
    std::string mode;
    int local;
    ReductionTimes withTransport, ownWork;
  };
  std::vector<Row> rows;
  for (int local : {1, 4}) {
    for (const std::string mode : {"fp32", "exact"}) {
      auto make = [&](tl::comm::Communicator& c) {
        return mode == "fp32" ? tl::reduce::createFp32Reducer(c, params, bucketBytes)
                              : tl::reduce::createExactReducer(c, params, names, bucketBytes);
      };
      Row row{mode, local, {}, {}};
      row.withTransport = timeReduction(*make(*comm), *comm, grads, local, repeats);
      row.ownWork = timeReduction(*make(alone), alone, grads, local, repeats);
      rows.push_back(row);
    }
  }

  if (comm->rank() == 0) {
    std::printf("ResNet-18 gradients: %zu tensors, %.1fM floats; %d processes (MPI), 1 compute thread "
                "each; median of %d reductions\n",
                params.size(), elements / 1e6, comm->size(), repeats);
    std::printf("training step (ResNet-18, CIFAR, batch 32, forward+backward+SGD): %.1f ms\n\n", stepMs);
    std::printf("%-6s %-8s %13s %10s %13s %12s %11s %10s\n", "mode", "local", "ms/reduction",
                "vs fp32", "of which own", "contribute", "finish", "overhead");
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const Row& base = rows[i - i % 2];  // the fp32 row with the same local count
      const bool isExact = r.mode == "exact";
      // Overhead: the extra time per step over fp32, against the local workers' compute.
      const double overhead = (r.withTransport.totalMs - base.withTransport.totalMs) / (stepMs * r.local) * 100.0;
      char ratio[32], extra[32];
      std::snprintf(ratio, sizeof ratio, "%.2f", r.withTransport.totalMs / base.withTransport.totalMs);
      std::snprintf(extra, sizeof extra, isExact ? "%.1f %%" : "-", overhead);
      std::printf("%-6s %-8d %13.1f %10s %13.1f %12.1f %11.1f %10s\n", r.mode.c_str(), r.local,
                  r.withTransport.totalMs, ratio, r.ownWork.totalMs, r.withTransport.contributeMs, r.withTransport.finishMs, extra);
    }
    std::printf("\nlocal: contributions per process (logical workers); contribute: ms per addContribution;\n"
                "of which own: the same reduction with no-op collectives (the reducer's own work);\n"
                "overhead: (exact - fp32 ms/reduction) / (training step ms x local); target <= 5 %%\n");
  }

  // The transport alone, for both payloads.
  double transport[2][2];  // [fp32, int64][tl communicator, blocking MPI_Allreduce]
  for (int kind = 0; kind < 2; ++kind)
    for (int blocking = 0; blocking < 2; ++blocking)
      transport[kind][blocking] = timeTransport(*comm, elements, kind ? at::kLong : at::kFloat, blocking, repeats);
  if (comm->rank() == 0) {
    std::printf("\ntransport of the gradients, 25 MiB buckets (ms)\n%-22s %16s %16s\n", "payload",
                "tl communicator", "MPI_Allreduce");
    std::printf("%-22s %16.1f %16.1f\n", "fp32 (4 bytes/value)", transport[0][0], transport[0][1]);
    std::printf("%-22s %16.1f %16.1f\n", "int64 (8 bytes/value)", transport[1][0], transport[1][1]);
    for (size_t i = 1; i < rows.size(); i += 2) {
      const double own = rows[i].ownWork.totalMs - rows[i - 1].ownWork.totalMs;
      const double projected = (own + transport[1][1] - transport[0][1]) / (stepMs * rows[i].local) * 100.0;
      std::printf("exact overhead with %d local, blocking-MPI transport: %.1f %% of the step "
                  "(own work %+.1f ms, transport %+.1f ms)\n",
                  rows[i].local, projected, own, transport[1][1] - transport[0][1]);
    }
  }
  return 0;
}
