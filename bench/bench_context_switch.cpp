// Context-switch overhead of ESTs: the step time of k ESTs on one process (k = 1, 2, 4, 8)
// against k x the step time of one EST with the same per-worker batch, for ResNet-20 and the
// small CNN, one compute thread. Each round runs every k once, in alternating order (forward,
// then backward: machine load that drifts over a round weighs on every k alike); the overhead
// of a round is its k-EST step against k x its own 1-EST step, and the table gives the median
// over rounds with its 95 % confidence interval (bench_stats.h), so that a 0.5 % target can be
// judged against the noise.
//
//   bench_context_switch [STEPS [ROUNDS]] [--device D]   (defaults 12, 8 and tl-launch's own)
//
// --device: tl-launch's --device for every run (bench/gpu_check.sh: cuda); left out, the flag is
// not passed.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/bench_support.h"

namespace {

std::string deviceFlag;  // " --device D" or empty

double stepSeconds(const std::string& root, const std::string& data, const std::string& model, int k,
                   int steps, int round) {
  std::string out = root + "/" + std::to_string(k) + "_" + std::to_string(round);
  tl::bench::runOrDie(tl::bench::mpirun(1) + tl::bench::binDir() + "/tl-launch --dataset cifar10 --data-dir " +
                      data + " " + model + " --batch 32 --workers 1 --compute-threads 1 --log-every 0" +
                      deviceFlag + " --logical-workers " + std::to_string(k) + " --steps " + std::to_string(steps) +
                      " --output-dir " + out + " >/dev/null");
  return tl::bench::medianStepSeconds(out, 3);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--device") {
      if (i + 1 >= argc || argv[i + 1][0] == '\0') {
        std::fprintf(stderr, "bench_context_switch: --device needs a value (cpu, cuda, ...)\n");
        return 2;
      }
      deviceFlag = std::string(" --device ") + argv[++i];
    } else {
      positional.push_back(argv[i]);
    }
  }
  const int steps = positional.size() > 0 ? std::atoi(positional[0].c_str()) : 12;
  const int rounds = positional.size() > 1 ? std::atoi(positional[1].c_str()) : 8;
  auto root = tl::bench::scratch("context-switch");
  auto data = tl::bench::synthData(root, 2048);
  struct Model {
    const char* name;
    const char* flags;
  };
  const std::vector<int> ks{1, 2, 4, 8};
  std::printf("EST context-switch overhead: step time of k ESTs on 1 process vs k x 1 EST (batch 32 "
              "per EST, 1 compute thread, median step of %d per run); median [95 %% CI] over %d "
              "alternating rounds%s\n\n", steps, rounds, deviceFlag.c_str());
  std::printf("%-10s %3s %-26s %-26s %-30s\n", "model", "k", "k ESTs step ms", "1 EST step ms x k",
              "overhead");
  std::vector<double> medians, everyRound;
  for (const Model& m : {Model{"cnn", "--model cnn"}, Model{"resnet20", "--model resnet --depth 20"}}) {
    std::vector<std::vector<double>> t(ks.size());  // t[k index][round], seconds
    for (int round = 0; round < rounds; ++round)
      for (size_t i : tl::bench::roundOrder(ks.size(), size_t(round)))
        t[i].push_back(stepSeconds(root + "/" + m.name, data, m.flags, ks[i], steps, round));
    for (size_t i = 1; i < ks.size(); ++i) {
      std::vector<double> ratio, scaledOne;
      for (int r = 0; r < rounds; ++r) {
        ratio.push_back(t[i][r] / (ks[i] * t[0][r]));
        scaledOne.push_back(ks[i] * t[0][r]);
      }
      const tl::bench::MedianCi overhead = tl::bench::medianWithCi(ratio);
      std::printf("%-10s %3d %-26s %-26s %-30s\n", m.name, ks[i],
                  tl::bench::formatCi(tl::bench::medianWithCi(t[i]), "%.1f", 1e3).c_str(),
                  tl::bench::formatCi(tl::bench::medianWithCi(scaledOne), "%.1f", 1e3).c_str(),
                  tl::bench::formatPercentCi(overhead).c_str());
      std::fflush(stdout);  // rows as they come: a full run takes minutes
      medians.push_back(overhead.median - 1);
      everyRound.insert(everyRound.end(), ratio.begin(), ratio.end());
    }
  }
  double sum = 0, worst = -1e9;
  for (double m : medians) {
    sum += m;
    worst = std::max(worst, m);
  }
  std::printf("\nmean of the medians %+.2f%%, worst median %+.2f%%; all rounds of every k > 1: %s "
              "(target: mean <= 1%%; published anchor 0.4%% mean, 2%% worst)\n",
              100 * sum / double(medians.size()), 100 * worst,
              tl::bench::formatPercentCi(tl::bench::medianWithCi(everyRound)).c_str());
  return 0;
}
