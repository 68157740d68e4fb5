// Training-step speed of tl's ResNet-18 (CIFAR input, batch 32, one compute thread) against
// PyTorch eager (Python) running the same model on the same machine in the same invocation.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/utils.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <algorithm>

#include "common/allocator_tuning.h"
#include "runtime/models/model.h"
#include "runtime/optim/optimizer.h"
#include "runtime/train/step.h"

namespace {

struct Measured {
  double stepMs = 0;
  double imagesPerSecond = 0;
};

Measured measureTl(int batch, int steps, int threads) {
  at::set_num_threads(threads);
  torch::manual_seed(0);
  tl::models::ModelConfig mc;
  mc.arch = "resnet18";
  auto model = tl::models::createModel(mc);
  model->train();
  tl::optim::OptimizerOptions oo;
  oo.name = "sgd";
  oo.lr = 0.01;
  oo.momentum = 0.9;
  auto opt = tl::optim::createOptimizer(oo, model->parameters());
  at::Tensor x = at::randn({batch, 3, 32, 32});
  at::Tensor y = at::randint(0, 10, {batch}, at::kLong);
  auto step = [&] {
    tl::train::forwardBackward(*model, x, y);
    opt->step(0.01);
  };
  for (int i = 0; i < 2; ++i) step();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
  return {dt * 1000, batch / dt};
}

bool measurePyTorch(const std::string& script, int batch, int steps, int threads, Measured* out) {
  std::string cmd = "/usr/bin/python3 " + script + " " + std::to_string(batch) + " " +
                    std::to_string(steps) + " " + std::to_string(threads) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  char buf[512];
  std::string text;
  while (fgets(buf, sizeof buf, p)) text += buf;
  if (pclose(p) != 0 || text.empty()) return false;
  auto j = nlohmann::json::parse(text);
  out->stepMs = j["step_ms"];
  out->imagesPerSecond = j["images_per_s"];
  return true;
}

}  // namespace

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  tl::tuneAllocatorForTraining();  // as tl-launch does; the PyTorch reference runs as users run it
  const int batch = 32, threads = 1;
  const int steps = argc > 1 ? std::atoi(argv[1]) : 6;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string script = std::string(TL_BENCH_SOURCE_DIR) + "/reference/resnet18_step.py";
  std::printf("ResNet-18 (CIFAR), batch %d, %d compute thread, %d timed steps per run, %d alternating rounds\n\n",
              batch, threads, steps, rounds);
  // Alternate the two so that machine noise hits both alike; report medians.
  std::vector<double> pyMs, tlMs;
  bool havePy = true;
  for (int r = 0; r < rounds; ++r) {
    Measured py;
    if (havePy && measurePyTorch(script, batch, steps, threads, &py)) pyMs.push_back(py.stepMs);
    else havePy = false;
    tlMs.push_back(measureTl(batch, steps, threads).stepMs);
  }
  const double tlStep = median(tlMs);
  std::printf("%-22s %10s %10s %12s\n", "implementation", "step ms", "images/s", "vs PyTorch");
  if (havePy) {
    const double pyStep = median(pyMs);
    std::printf("%-22s %10.1f %10.1f %12s\n", "PyTorch eager (ref)", pyStep, batch * 1e3 / pyStep, "1.00");
    std::printf("%-22s %10.1f %10.1f %12.2f\n", "tl (libtorch C++)", tlStep, batch * 1e3 / tlStep, pyStep / tlStep);
  } else {
    std::printf("%-22s %10s %10s %12s\n", "PyTorch eager (ref)", "n/a", "n/a", "(python3-torch missing)");
    std::printf("%-22s %10.1f %10.1f %12s\n", "tl (libtorch C++)", tlStep, batch * 1e3 / tlStep, "-");
  }
  std::printf("\ntarget: tl images/s >= PyTorch eager (ratio >= 1.00)\n");
  return 0;
}
