// Context-switch overhead of ESTs: the step time of k ESTs on one process (k = 1, 2, 4, 8)
// against k x the step time of one EST with the same per-worker batch, for ResNet-20 and the
// small CNN, one compute thread. Runs alternate between k = 1 and k so that machine noise
// hits both alike; each figure is the median step after warm-up.
#include <cstdio>
#include <map>

#include "bench/bench_support.h"

namespace {

double stepSeconds(const std::string& root, const std::string& data, const std::string& model, int k,
                   int steps, int rep) {
  std::string out = root + "/" + std::to_string(k) + "_" + std::to_string(rep);
  tl::bench::runOrDie(tl::bench::mpirun(1) + tl::bench::binDir() + "/tl-launch --dataset cifar10 --data-dir " +
                      data + " " + model + " --batch 32 --workers 1 --compute-threads 1 --log-every 0" +
                      " --logical-workers " + std::to_string(k) + " --steps " + std::to_string(steps) +
                      " --output-dir " + out + " >/dev/null");
  return tl::bench::medianStepSeconds(out, 3);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 12;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 2;
  auto root = tl::bench::scratch("context-switch");
  auto data = tl::bench::synthData(root, 2048);
  struct Model {
    const char* name;
    const char* flags;
  };
  std::printf("EST context-switch overhead: step time of k ESTs on 1 process vs k x 1 EST "
              "(batch 32 per EST, 1 compute thread, median step of %d, best of %d runs)\n\n", steps, reps);
  std::printf("%-10s %3s %14s %16s %10s\n", "model", "k", "k ESTs step ms", "k x 1 EST ms", "overhead");
  double sum = 0, worst = -1e9;
  int n = 0;
  for (const Model& m : {Model{"cnn", "--model cnn"}, Model{"resnet20", "--model resnet --depth 20"}}) {
    for (int k : {1, 2, 4, 8}) {
      double best1 = 1e9, bestK = 1e9;
      for (int rep = 0; rep < reps; ++rep) {
        best1 = std::min(best1, stepSeconds(root + "/" + m.name, data, m.flags, 1, steps, rep));
        if (k > 1) bestK = std::min(bestK, stepSeconds(root + "/" + m.name, data, m.flags, k, steps, rep));
      }
      if (k == 1) bestK = best1;
      double overhead = bestK / (k * best1) - 1.0;
      std::printf("%-10s %3d %14.1f %16.1f %+9.2f%%\n", m.name, k, bestK * 1e3, k * best1 * 1e3, 100 * overhead);
      if (k > 1) {
        sum += overhead;
        worst = std::max(worst, overhead);
        ++n;
      }
    }
  }
  std::printf("\nmean overhead %+.2f%%, worst %+.2f%% (target: mean <= 1%%; published anchor 0.4%% mean, 2%% worst)\n",
              100 * sum / n, 100 * worst);
  return 0;
}
