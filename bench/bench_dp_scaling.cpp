// Data-parallel scaling: per-process images/s of tl-launch with 2 processes against 1 process
// (ResNet-20 on synthetic CIFAR-format data, one compute thread each), measured back to back.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

std::string run(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::fprintf(stderr, "bench_dp_scaling: command failed (%d): %s\n", rc, cmd.c_str());
    std::exit(1);
  }
  return cmd;
}

nlohmann::json readSummary(const std::string& dir) {
  std::ifstream in(dir + "/summary.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string model = argc > 1 ? argv[1] : "resnet20";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 30;
  const std::string work = "/tmp/tl-bench-dp-scaling";
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  const std::string bin = TL_BIN_DIR;
  run(bin + "/tl-data synth --out " + work + "/data --train 4096 --test 16 --seed 1 >/dev/null");
  std::string modelFlags = model == "resnet18" ? "--model resnet18" : "--model resnet --depth 20";
  std::string mpi = std::string(TL_MPIEXEC) + " --oversubscribe" + (geteuid() == 0 ? " --allow-run-as-root" : "");
  double perProcess[3] = {0, 0, 0};
  for (int np : {1, 2}) {
    std::string out = work + "/np" + std::to_string(np);
    run(mpi + " -np " + std::to_string(np) + " " + bin + "/tl-launch --dataset cifar10 --data-dir " +
        work + "/data " + modelFlags + " --batch 32 --steps " + std::to_string(steps) +
        " --workers 1 --compute-threads 1 --log-every 0 --output-dir " + out + " >/dev/null");
    perProcess[np] = readSummary(out)["images_per_s"].get<double>() / np;
  }
  std::printf("\n%s, batch 32 per process, %d steps, 1 compute thread per process\n\n", model.c_str(), steps);
  std::printf("%-10s %22s %12s\n", "processes", "images/s per process", "vs 1 proc");
  std::printf("%-10d %22.1f %12.2f\n", 1, perProcess[1], 1.0);
  std::printf("%-10d %22.1f %12.2f\n", 2, perProcess[2], perProcess[2] / perProcess[1]);
  std::printf("\ntarget: 2 processes >= 0.90 x the per-process rate of 1 process\n");
  return 0;
}
