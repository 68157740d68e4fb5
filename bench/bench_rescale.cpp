// Rescale by checkpoint-restart: seconds from SIGUSR1 to the first step after the job resumes
// on a new placement, ResNet-18 (4 logical workers: 2 processes -> 1 process and -> 4), against
// a cold start of the same job (launch to first step) measured in the same invocation.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "bench/bench_support.h"

extern char** environ;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string jobFlags(const std::string& data) {
  return " --dataset cifar10 --data-dir " + data +
         " --model resnet18 --batch 32 --logical-workers 4 --workers 1 --log-every 0 --steps 100";
}

}  // namespace

int main() {
  using namespace tl::bench;
  auto root = scratch("rescale");
  auto data = synthData(root, 1024);
  std::printf("Rescale by checkpoint-restart, ResNet-18, 4 logical workers, batch 32 each\n\n");
  std::printf("%-22s %14s %14s %12s %14s %10s\n", "rescale", "signal->exit s", "exit->step s", "total s",
              "cold start s", "vs cold");
  for (int target : {1, 4}) {
    const std::string tag = "to" + std::to_string(target);
    const std::string out = root + "/" + tag, ckpt = out + "/ckpt";
    std::string cmd = "exec " + mpirun(2) + binDir() + "/tl-launch" + jobFlags(data) + " --output-dir " + out +
                      " --checkpoint-dir " + ckpt + " >" + root + "/" + tag + ".log 2>&1";
    const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
    pid_t pid;
    if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) return 1;
    while (stepTimes(out).size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double signalled = now();
    kill(pid, SIGUSR1);
    int status = 0;
    waitpid(pid, &status, 0);
    const double exited = now();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "the stopped job failed; see %s/%s.log\n", root.c_str(), tag.c_str());
      return 1;
    }
    const std::string resumed = out + "_resumed";
    // --stop-at-step bounds the resumed run: one step after the checkpoint is enough.
    const int stoppedAt = readJson(out + "/summary.json")["steps"];
    const double launched = now();
    runOrDie(mpirun(target) + binDir() + "/tl-launch --resume " + ckpt + " --output-dir " + resumed +
             " --stop-at-step " + std::to_string(stoppedAt + 1) + " --checkpoint-dir " + root + "/scratch_ckpt" +
             " >/dev/null");
    const double firstStep = stepTimes(resumed).front();

    // Cold start of the same job on the target placement: launch to the end of its first step.
    const std::string cold = out + "_cold";
    const double coldLaunched = now();
    runOrDie(mpirun(target) + binDir() + "/tl-launch" + jobFlags(data) + " --output-dir " + cold +
             " --stop-at-step 1 --checkpoint-dir " + root + "/scratch_ckpt >/dev/null");
    const double coldSeconds = stepTimes(cold).front() - coldLaunched;
    const double total = firstStep - signalled;
    std::printf("%-22s %14.2f %14.2f %12.2f %14.2f %9.2fx\n", ("2 procs -> " + std::to_string(target)).c_str(),
                exited - signalled, firstStep - launched, total, coldSeconds, total / coldSeconds);
  }
  std::printf("\ncold start: launch of a fresh job to the end of its first step (which includes the exact\n"
              "reduction's first-step replay; a resumed job has its scales and does not replay)\n");
  return 0;
}
