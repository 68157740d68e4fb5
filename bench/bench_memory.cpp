// Memory: peak resident memory of k ESTs in one process against k DDP processes packed on the
// same machine (k = 1, 2, 4, 8), ResNet-18, batch 32 per worker, a few steps each.
#include <cstdio>

#include "bench/bench_support.h"

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 2;
  auto root = tl::bench::scratch("memory");
  auto data = tl::bench::synthData(root, 1024);
  auto run = [&](const std::string& tag, int np, int k) {
    std::string out = root + "/" + tag;
    tl::bench::runOrDie(tl::bench::mpirun(np) + tl::bench::binDir() + "/tl-launch --dataset cifar10 --data-dir " +
                        data + " --model resnet18 --batch 32 --workers 1 --log-every 0 --logical-workers " +
                        std::to_string(k) + " --steps " + std::to_string(steps) + " --output-dir " + out +
                        " >/dev/null");
    return tl::bench::readJson(out + "/summary.json")["peak_rss_mb_sum"].get<double>();
  };
  std::printf("Peak resident memory, ResNet-18, batch 32 per worker, %d steps\n\n", steps);
  std::printf("%3s %18s %10s %22s %10s\n", "k", "k ESTs, 1 proc MB", "vs k=1", "k DDP procs (sum) MB", "vs k=1");
  double estOne = 0, ddpOne = 0;
  for (int k : {1, 2, 4, 8}) {
    double est = run("est" + std::to_string(k), 1, k);
    double ddp = run("ddp" + std::to_string(k), k, k);
    if (k == 1) {
      estOne = est;
      ddpOne = ddp;
    }
    std::printf("%3d %18.0f %9.2fx %22.0f %9.2fx\n", k, est, est / estOne, ddp, ddp / ddpOne);
  }
  std::printf("\ntarget: k ESTs <= 1.15x one worker; packed DDP processes grow ~k x\n");
  return 0;
}
