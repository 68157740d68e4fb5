// --placement auto on devices of different speed, measured in one invocation against even
// placement and the ideal bound from the measured speeds. 3 processes, N = 10 logical workers,
// ResNet-20, batch 32 each, on sim devices (--device sim:RATE: each EST's micro-batch takes
// batch/RATE seconds of waiting, no core) emulated to speeds 1 : 1 : 0.5 and 1 : 0.5 : 0.25
// with --emulate-slowdown: the timings are sleep-dominated, so the ratios mean something on a
// loaded 2-core machine. Then one process slows down 2x mid-run: seconds until the re-plan and
// images/s after it.
//
// images/s = N * batch / median step time after the placement settled. Ideal = N * batch /
// (N / sum_g 1/t_g) with t_g the seconds per EST the job measured (its plan records).
#include <cstdio>
#include <map>

#include "bench/bench_support.h"

namespace {

using namespace tl::bench;

constexpr int kN = 10;
constexpr int kBatch = 32;
constexpr double kRate = 3200;  // images/s of the fast device: 10 ms per EST
constexpr int kSteps = 60;

std::string jobFlags(const std::string& data) {
  return " --dataset cifar10 --data-dir " + data + " --model resnet --depth 20 --batch " + std::to_string(kBatch) +
         " --logical-workers " + std::to_string(kN) + " --device sim:" + std::to_string(int(kRate)) +
         " --workers 1 --log-every 0 --control-bind none --steps " + std::to_string(kSteps);
}

std::string run(const std::string& root, const std::string& name, const std::string& data, const std::string& flags) {
  const std::string out = root + "/" + name;
  runOrDie(mpirun(3) + binDir() + "/tl-launch" + jobFlags(data) + flags + " --output-dir " + out + " >" + out +
           ".log 2>&1");
  return out;
}

// The step after which the last move happened (0: none).
int lastMove(const std::string& dir) {
  int step = 0;
  for (const auto& r : metricsRecords(dir, "rescale")) step = r["step"].get<int>();
  return step;
}

}  // namespace

int main() {
  const std::string root = scratch("hetero-placement");
  // 640 images: two full batches per EST and epoch (a short last batch would alternate the step time).
  const std::string data = synthData(root, 640);
  std::printf("Automatic EST placement on emulated devices of different speed: 3 processes, N = %d,\n"
              "ResNet-20 on sim devices (%.0f images/s fast), batch %d each, %d steps per run\n\n",
              kN, kRate, kBatch, kSteps);
  std::printf("%-14s %10s %10s %12s %12s %12s %9s %9s\n", "speeds", "even", "auto plan", "even img/s", "auto img/s",
              "ideal img/s", "auto/ideal", "auto/even");
  struct Case {
    const char* speeds;
    const char* slowdown;
    const char* even;
  };
  for (const Case& c : {Case{"1 : 1 : 0.5", "1,1,2", "4,3,3"}, Case{"1 : 0.5 : 0.25", "1,2,4", "4,3,3"}}) {
    const std::string tag = std::string(c.slowdown);
    const std::string even = run(root, "even_" + tag, data, std::string(" --emulate-slowdown ") + c.slowdown);
    const std::string autoRun = run(root, "auto_" + tag, data,
                                    std::string(" --placement auto --replan-window 5 --emulate-slowdown ") + c.slowdown);
    const double evenStep = medianStep(stepEnds(even), 5, kSteps);
    const int settled = lastMove(autoRun) + 2;
    const double autoStep = medianStep(stepEnds(autoRun), settled, kSteps);
    const auto plans = metricsRecords(autoRun, "plan");
    if (plans.empty()) {
      std::fprintf(stderr, "benchmark: the auto run made no plan (see %s.log)\n", autoRun.c_str());
      return 1;
    }
    double rate = 0;
    for (const auto& t : plans.back()["seconds_per_est"]) rate += 1.0 / t.get<double>();
    const double idealStep = kN / rate;
    const double images = double(kN * kBatch);
    std::printf("%-14s %10s %10s %12.0f %12.0f %12.0f %8.3fx %8.2fx\n", c.speeds, c.even,
                plans.back()["placement"].get<std::string>().c_str(), images / evenStep, images / autoStep,
                images / idealStep, idealStep / autoStep, evenStep / autoStep);
  }

  // Mid-run slowdown: 1 : 1 : 0.5, then process 0 becomes 2x slower after step 30.
  constexpr int kAt = 30;
  const std::string mid = run(root, "midrun", data,
                              " --placement auto --replan-window 5 --replan-hold 10 --emulate-slowdown 1,1,2"
                              " --emulate-slowdown-at " + std::to_string(kAt) + ":2,1,2");
  const auto ends = stepEnds(mid);
  const auto moves = metricsRecords(mid, "rescale");
  const nlohmann::json* replan = nullptr;
  for (const auto& m : moves)
    if (m["step"].get<int>() > kAt) replan = &m;
  if (!replan) {
    std::fprintf(stderr, "benchmark: no re-plan after the slowdown at step %d (see %s.log)\n", kAt, mid.c_str());
    return 1;
  }
  const int replanStep = (*replan)["step"].get<int>();
  const double seconds = ends.at(replanStep) - ends.at(kAt);
  const double before = medianStep(ends, kAt + 1, replanStep);
  const double after = medianStep(ends, replanStep + 2, kSteps);
  std::printf("\nmid-run: process 0 slows down 2x after step %d (1 : 1 : 0.5 -> 0.5 : 1 : 0.5)\n", kAt);
  std::printf("%-22s %12s %16s %16s %10s\n", "re-plan", "seconds to it", "img/s before it", "img/s after it", "after/before");
  std::printf("%-22s %12.2f %16.0f %16.0f %9.2fx\n",
              ((*replan)["from"].get<std::string>() + " -> " + (*replan)["to"].get<std::string>()).c_str(), seconds,
              kN * kBatch / before, kN * kBatch / after, before / after);
  std::printf("\nmoves in the mid-run job: %zu (the first plan, then the re-plan)\n", moves.size());
  std::printf("Targets: auto >= 0.95x ideal and >= 1.3x even at 1 : 1 : 0.5; re-plan within 30 s.\n");
  return 0;
}
