// In-place rescale (tl-ctl) against checkpoint-restart of the same change, measured in the same
// invocation: ResNet-18, 4 logical workers, batch 32 each. Changes: shrink 4 -> 2 processes,
// placement 3,1 -> 2,2, grow 2 -> 4.
//
// Pause of a change = end of the first step on the new layout - end of the last step on the old
// one - a normal step on the new layout (the median of the steps after the first). For a grow,
// also the start-up of the new processes that the job trained through (metrics' startup_s).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "bench/bench_support.h"

extern char** environ;

namespace {

using namespace tl::bench;

std::string jobFlags(const std::string& data, int steps) {
  return " --dataset cifar10 --data-dir " + data + " --model resnet18 --batch 32 --logical-workers 4 --workers 1" +
         " --log-every 0 --steps " + std::to_string(steps);
}

pid_t startJob(const std::string& cmd) {
  const std::string shell = "exec " + cmd;
  const char* argv[] = {"/bin/sh", "-c", shell.c_str(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) {
    std::fprintf(stderr, "benchmark: cannot start %s\n", cmd.c_str());
    std::exit(1);
  }
  return pid;
}

void waitOk(pid_t pid, const std::string& what) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "benchmark: %s failed\n", what.c_str());
    std::exit(1);
  }
}

void waitForSteps(const std::string& dir, int steps) {
  while (stepEnds(dir).size() < size_t(steps)) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

struct Measured {
  double pause = 0, normal = 0;
};

// Checkpoint-restart of one change: a job on `fromNp` processes (`fromFlags`) stopped by SIGUSR1
// after a few steps, resumed on `toNp` (`toFlags`) for a few steps.
Measured checkpointRestart(const std::string& root, const std::string& tag, const std::string& data, int fromNp,
                           const std::string& fromFlags, int toNp, const std::string& toFlags) {
  const std::string a = root + "/" + tag + "_before", b = root + "/" + tag + "_after", ckpt = root + "/" + tag + "_ckpt";
  pid_t pid = startJob(mpirun(fromNp) + binDir() + "/tl-launch" + jobFlags(data, 100) + fromFlags + " --output-dir " +
                       a + " --checkpoint-dir " + ckpt + " --control-bind none >" + a + ".log 2>&1");
  waitForSteps(a, 3);
  kill(pid, SIGUSR1);
  waitOk(pid, "the job stopped for checkpoint-restart (" + tag + ")");
  const auto before = stepEnds(a);
  const int last = before.rbegin()->first;
  runOrDie(mpirun(toNp) + binDir() + "/tl-launch --resume " + ckpt + toFlags + " --output-dir " + b +
           " --stop-at-step " + std::to_string(last + 4) + " --checkpoint-dir " + root + "/scratch_ckpt" +
           " --control-bind none >" + b + ".log 2>&1");
  const auto after = stepEnds(b);
  Measured m;
  m.normal = medianStep(after, last + 2, last + 4);
  m.pause = after.at(last + 1) - before.at(last) - m.normal;
  return m;
}

}  // namespace

int main() {
  auto root = scratch("inplace-rescale");
  auto data = synthData(root, 50000);  // the size of CIFAR-10's training set
  std::printf("In-place rescale vs checkpoint-restart, ResNet-18, 4 logical workers, batch 32 each\n\n");

  // In place: one job, the changes at known steps (tl-ctl --at-step), each followed by steps
  // on the new layout; the cycle shrink, placement 3,1, placement 2,2, grow runs kCycles times
  // and each figure is the median over the cycles (steps of 2-3 s on a shared machine vary by
  // more than the pauses measured).
  constexpr int kCycles = 3, kCycle = 20, kFirst = 3;
  const std::string out = root + "/inplace";
  const std::string ctl = binDir() + "/tl-ctl ";
  pid_t job = startJob(mpirun(4) + binDir() + "/tl-launch" + jobFlags(data, kFirst + kCycles * kCycle + 2) +
                       " --output-dir " + out + " >" + out + ".log 2>&1");
  while (!std::filesystem::exists(out + "/control.json")) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // One request at a time (tl-ctl answers once it is applied). A grow is asked for only once
  // the steps that measure the placement change are done, so that its processes, which start
  // while the job trains, do not slow those steps down.
  size_t requests = 0;
  auto send = [&](const std::string& r) {
    runOrDie(ctl + r + " --timeout 900 >/dev/null");
    ++requests;
  };
  for (int c = 0; c < kCycles; ++c) {
    const int b = kFirst + c * kCycle;
    send("rescale " + out + " --processes 2 --at-step " + std::to_string(b));
    send("placement " + out + " 3,1 --at-step " + std::to_string(b + 3));
    send("placement " + out + " 2,2 --at-step " + std::to_string(b + 6));
    waitForSteps(out, b + 10);
    send("rescale " + out + " --processes 4");
  }
  waitOk(job, "the in-place job");
  const auto ends = stepEnds(out);
  const auto ev = metricsRecords(out, "rescale");
  if (ev.size() != requests) {
    std::fprintf(stderr, "benchmark: expected %zu rescale events, got %zu\n", requests, ev.size());
    return 1;
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // Per measured change (shrink = 0, placement 3,1 -> 2,2 = 2, grow = 3 of each cycle): the
  // median over the cycles of the step-based pause, of the job's own figure and of the step.
  struct InPlace {
    double pause, controller, normal, megabytes, hidden;
  };
  auto measure = [&](int which) {
    std::vector<double> pause, controller, normal, mb, hidden;
    for (int c = 0; c < kCycles; ++c) {
      const auto& e = ev[size_t(c * 4 + which)];
      const int s = e["step"];
      const double step = medianStep(ends, s + 2, s + 3);
      normal.push_back(step);
      pause.push_back(ends.at(s + 1) - ends.at(s) - step);
      controller.push_back(e["pause_s"].get<double>());
      mb.push_back(e["bytes_moved"].get<double>() / 1e6);
      hidden.push_back(e["startup_s"].get<double>());
    }
    return InPlace{median(pause), median(controller), median(normal), median(mb), median(hidden)};
  };
  const InPlace inplace[] = {measure(0), measure(2), measure(3)};

  const Measured crShrink = checkpointRestart(root, "shrink", data, 4, "", 2, "");
  const Measured crPlacement = checkpointRestart(root, "placement", data, 2, " --placement 3,1", 2, " --placement 2,2");
  const Measured crGrow = checkpointRestart(root, "grow", data, 2, "", 4, "");

  std::printf("%-22s %8s %11s %11s %11s %9s %12s %9s\n", "change", "step s", "in-place s", "(in-job s)",
              "ckpt-rst s", "speed-up", "start-up hid", "moved MB");
  const char* names[] = {"shrink 4 -> 2", "placement 3,1 -> 2,2", "grow 2 -> 4"};
  const Measured cr[] = {crShrink, crPlacement, crGrow};
  for (int i = 0; i < 3; ++i) {
    const InPlace& m = inplace[i];
    // Step-time noise can make the step-based figure smaller than the change itself took.
    const double pause = std::max(m.pause, m.controller);
    char hid[32] = "-";
    if (i == 2) std::snprintf(hid, sizeof hid, "%.2f s", m.hidden);
    std::printf("%-22s %8.2f %11.3f %11.3f %11.2f %8.1fx %12s %9.1f\n", names[i], m.normal, m.pause, m.controller,
                cr[i].pause, cr[i].pause / std::max(pause, 1e-3), hid, m.megabytes);
  }
  std::printf("\nin-place: median over %d cycles. pause = end of the first step on the new layout - end\n"
              "of the last on the old - a normal step on the new layout (median of the next two);\n"
              "in-job: the change alone, as the job measured it (broadcast to the end of the layout\n"
              "change); speed-up against the larger of the two. Checkpoint-restart: SIGUSR1,\n"
              "checkpoint, exit, mpirun --resume on the new layout. Targets: pause <= 1 s, >= 5x faster.\n",
              kCycles);
  return 0;
}
