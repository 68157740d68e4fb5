// Data-parallel scaling: per-process images/s of tl-launch with 2 processes against 1 process
// (one compute thread each, batch 32 per process), from the median steady-state step time of
// each run; the two runs alternate so machine noise hits both alike.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_support.h"

int main(int argc, char** argv) {
  using namespace tl::bench;
  const std::string model = argc > 1 ? argv[1] : "resnet20";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 30;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 2;
  auto root = scratch("dp-scaling");
  auto data = synthData(root, 4096);
  const std::string modelFlags = model == "resnet18" ? "--model resnet18" : "--model resnet --depth 20";
  auto perProcessRate = [&](int np, int round) {
    std::string out = root + "/np" + std::to_string(np) + "_" + std::to_string(round);
    // Default binding (one core per rank) keeps the two processes from trading places.
    std::string mpi = std::string(TL_MPIEXEC) + (geteuid() == 0 ? " --allow-run-as-root" : "") + " -np " +
                      std::to_string(np) + " ";
    runOrDie(mpi + binDir() + "/tl-launch --dataset cifar10 --data-dir " + data + " " + modelFlags +
             " --batch 32 --steps " + std::to_string(steps) +
             " --workers 1 --compute-threads 1 --log-every 0 --output-dir " + out + " >/dev/null");
    return 32.0 / medianStepSeconds(out, 3);
  };
  double best[3] = {0, 0, 0};
  for (int r = 0; r < rounds; ++r) {
    for (int np : {1, 2}) best[np] = std::max(best[np], perProcessRate(np, r));
  }
  std::printf("\n%s, batch 32 per process, 1 compute thread per process, median step of %d, best of %d\n\n",
              model.c_str(), steps, rounds);
  std::printf("%-10s %22s %12s\n", "processes", "images/s per process", "vs 1 proc");
  std::printf("%-10d %22.1f %12.2f\n", 1, best[1], 1.0);
  std::printf("%-10d %22.1f %12.2f\n", 2, best[2], best[2] / best[1]);
  std::printf("\ntarget: 2 processes >= 0.90 x the per-process rate of 1 process\n");
  return 0;
}
