// Step time with the gradient reduction overlapped with backward (--overlap on) against the
// reduction after backward (off), measured side by side: ResNet-18 and ResNet-20 on CIFAR-sized
// synthetic images, 1 and 2 ESTs per process, exact and fp32 reduction. Run under
// `mpirun -np 2`; every process builds the same jobs in the same order.
//
//   bench_overlap [--rounds R] [--steps S] [--batch B] [--bucket-mb MB] [--data DIR]
//                 [--arch resnet18|resnet20] [--backward-thread on]
//
// --backward-thread on: "on" runs backward on a helper thread whose hooks hand the gradients
// over to the training thread, as on a GPU (est/gradient_handoff.h): the hand-over's cost on
// the CPU. --arch: only that model.
//
// Each round runs every configuration once with overlap off and once on, the two back to back
// in an order that alternates from round to round, so a slow spell of this shared machine hits
// both. A run's figure is its median step time after two warm-up steps (the exact mode's
// first-step replay among them); the table gives, per configuration, the median over rounds of
// each, and the median and range of the per-round ratios on/off (below 1: overlap is faster).
#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dataload/synthetic.h"
#include "est/executor_builder.h"
#include "runtime/comm/mpi/mpi_communicator.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Records when each step ended.
class StepClock final : public tl::est::StepObserver {
 public:
  tl::est::StepAction afterStep(int64_t, tl::est::EstExecutor&) override {
    ends.push_back(Clock::now());
    return tl::est::StepAction::Continue;
  }
  std::vector<Clock::time_point> ends;
};

struct Config {
  std::string arch;
  int depth;
  int perProcess;
  tl::Reduction reduction;
  std::string name() const {
    return (arch == "resnet18" ? std::string("resnet18") : "resnet" + std::to_string(depth)) + " 2x" +
           std::to_string(perProcess) + " " + tl::toString(reduction);
  }
};

// Median step seconds of one job (the same on every process: the slowest one's, via a max).
double stepSeconds(const Config& c, bool overlap, bool backwardThread, int steps, int batch,
                   double bucketMb, const std::string& data, tl::comm::Communicator& world) {
  tl::JobConfig job;
  job.model.arch = c.arch;
  job.model.depth = c.depth;
  job.dataset = "cifar10";
  job.dataDir = data;
  job.batch = batch;
  job.steps = steps + 2;
  job.workers = 1;
  job.seed = 5;
  job.reduction = c.reduction;
  job.logEvery = 0;
  job.overlap = overlap;
  job.bucketBytes = int64_t(bucketMb * 1024 * 1024);
  auto executor = tl::est::ExecutorBuilder(job)
                      .layout(tl::est::Placement::withIdleMembers({c.perProcess, c.perProcess}), world, world)
                      .backwardOnHelperThread(backwardThread)
                      .build();
  tl::train::MetricsLog metrics;
  StepClock clock;
  executor->run(metrics, &clock);
  std::vector<double> d;
  for (size_t i = 2; i < clock.ends.size(); ++i)
    d.push_back(std::chrono::duration<double>(clock.ends[i] - clock.ends[i - 1]).count());
  at::Tensor t = at::full({1}, median(d), at::kDouble);
  world.allreduce(t, tl::comm::ReduceOp::Max);
  return t.item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  tl::comm::MpiSession session(&argc, &argv);
  auto world = tl::comm::createMpiWorldCommunicator();
  spdlog::set_level(spdlog::level::warn);  // the jobs' epoch tables would bury the table
  int rounds = 3, steps = 4, batch = 16;
  double bucketMb = 25;
  std::string data = "/tmp/tl-bench-overlap-data";
  std::string onlyArch;
  bool backwardThread = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--bucket-mb")) bucketMb = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--data")) data = argv[i + 1];
    else if (!std::strcmp(argv[i], "--arch")) onlyArch = argv[i + 1];
    else if (!std::strcmp(argv[i], "--backward-thread")) backwardThread = !std::strcmp(argv[i + 1], "on");
    else {
      std::fprintf(stderr, "bench_overlap: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (!onlyArch.empty() && onlyArch != "resnet18" && onlyArch != "resnet20") {
    std::fprintf(stderr, "bench_overlap: --arch must be resnet18 or resnet20, got '%s'\n", onlyArch.c_str());
    return 2;
  }
  if (rounds < 1 || steps < 1 || batch < 1 || !(bucketMb > 0)) {
    std::fprintf(stderr, "bench_overlap: --rounds, --steps, --batch and --bucket-mb must be positive\n");
    return 2;
  }
  if (world->rank() == 0) {
    tl::data::SyntheticOptions so;
    so.trainImages = 4 * batch * (steps + 2);
    so.testImages = 8;
    tl::data::writeSyntheticCifar10(so, data);
  }
  world->barrier();

  std::vector<Config> configs;
  for (const auto& [arch, depth] : std::vector<std::pair<std::string, int>>{{"resnet18", 0}, {"resnet", 20}}) {
    if (!onlyArch.empty() && onlyArch != (arch == "resnet" ? "resnet20" : arch)) continue;
    for (int per : {1, 2})
      for (auto red : {tl::Reduction::Exact, tl::Reduction::Fp32}) configs.push_back({arch, depth, per, red});
  }

  std::vector<std::vector<double>> on(configs.size()), off(configs.size()), ratio(configs.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < configs.size(); ++i) {
      const bool onFirst = (r + int(i)) % 2 == 0;
      const double a = stepSeconds(configs[i], onFirst, backwardThread, steps, batch, bucketMb, data, *world);
      const double b = stepSeconds(configs[i], !onFirst, backwardThread, steps, batch, bucketMb, data, *world);
      on[i].push_back(onFirst ? a : b);
      off[i].push_back(onFirst ? b : a);
      ratio[i].push_back(on[i].back() / off[i].back());
      if (world->rank() == 0) {
        std::fprintf(stderr, "round %d %-24s off %.1f ms on %.1f ms\n", r + 1, configs[i].name().c_str(),
                     1e3 * off[i].back(), 1e3 * on[i].back());
      }
    }
  }
  if (world->rank() != 0) return 0;
  std::printf("bench_overlap: 2 processes, batch %d per EST, buckets of %g MiB, %d rounds of %d timed "
              "steps, compute threads %d%s\n",
              batch, bucketMb, rounds, steps, at::get_num_threads(),
              backwardThread ? "; on = backward on a helper thread, gradients handed over (the GPU's path)" : "");
  std::printf("%-24s %12s %12s %10s %18s\n", "config", "off ms/step", "on ms/step", "on/off", "on/off range");
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto [lo, hi] = std::minmax_element(ratio[i].begin(), ratio[i].end());
    std::printf("%-24s %12.1f %12.1f %10.3f %8.3f..%-8.3f\n", configs[i].name().c_str(), 1e3 * median(off[i]),
                1e3 * median(on[i]), median(ratio[i]), *lo, *hi);
  }
  return 0;
}
