// In-place rescale (tl-ctl) against checkpoint-restart of the same change, measured in the same
// invocation: ResNet-18, 4 logical workers, batch 32 each. Changes: shrink 4 -> 2 processes,
// placement 3,1 -> 2,2, grow 2 -> 4.
//
// Pause of a change = end of the first step on the new layout - end of the last step on the old
// one - a normal step on the new layout (the median of the steps after the first). For a grow,
// also the start-up of the new processes that the job trained through (metrics' startup_s).
//
// Issue 43: the in-place job runs twice in the same invocation, the joiners' warm-up as before
// issue 43 (TL_JOIN_WARMUP=1: one forward and backward of a zero batch) and in full (the
// default), and every grow's pause is split per cycle: the boundary (end of the last old step
// -> the command received), the new communicators, the layout change and within it the state
// transfer, and each process's first step on the new layout against its second (wall and CPU
// seconds; survivors S, joiners J). TL_BENCH_CYCLES (default 3) sets the cycles per job,
// TL_BENCH_CKPT=0 skips checkpoint-restart, TL_BENCH_WARMUPS="1 2" the jobs' warm-ups
// (0: none), TL_BENCH_SENDERS="all" who sends the replica to the joiners (issue 43): "all"
// every survivor, "1" the owner of EST 0 alone as before (TL_REPLICA_SENDERS=1); every
// warm-up runs with every sender setting, one job each, in this invocation.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>
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


struct GrowCycle {
  int step = 0;
  double normal = 0, pause = 0, inJob = 0, boundary = 0, communicators = 0, layout = 0, transfer = 0, mb = 0;
  double hidden = 0;
  double linkMbps = 0;  // one broadcast of the replica's bytes over the same members (rescale_steps)
  std::vector<nlohmann::json> processes;  // rescale_steps: rank, joined, wall_s, cpu_s
};

struct InPlace {
  double pause, controller, normal, megabytes, hidden;
};

struct InPlaceRun {
  InPlace shrink, placement, grow;
  std::vector<GrowCycle> grows;
};

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// One in-place job: the cycle shrink 4 -> 2, placement 3,1, placement 2,2, grow 2 -> 4, kCycles
// times; joiners warm up at level `warmUp` (TL_JOIN_WARMUP).
InPlaceRun inPlaceJob(const std::string& root, const std::string& data, int cycles, int warmUp,
                      const std::string& senders) {
  // The changes at known steps (tl-ctl --at-step), each followed by steps on the new layout;
  // each figure is the median over the cycles (steps of 2-3 s on a shared machine vary by more
  // than the pauses measured).
  constexpr int kCycle = 20, kFirst = 3;
  const std::string out = root + "/inplace_warmup" + std::to_string(warmUp) + "_senders_" + senders;
  const std::string ctl = binDir() + "/tl-ctl ";
  const std::string sendersEnv = senders == "1" ? " TL_REPLICA_SENDERS=1" : "";
  pid_t job = startJob("env TL_RESCALE_STEP_TIMES=1 TL_JOIN_WARMUP=" + std::to_string(warmUp) + sendersEnv + " " + mpirun(4) +
                       binDir() + "/tl-launch" + jobFlags(data, kFirst + cycles * kCycle + 2) + " --output-dir " + out +
                       " >" + out + ".log 2>&1");
  while (!std::filesystem::exists(out + "/control.json")) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // One request at a time (tl-ctl answers once it is applied). A grow is asked for only once
  // the steps that measure the placement change are done, so that its processes, which start
  // while the job trains, do not slow those steps down.
  size_t requests = 0;
  auto send = [&](const std::string& r) {
    runOrDie(ctl + r + " --timeout 900 >/dev/null");
    ++requests;
  };
  for (int c = 0; c < cycles; ++c) {
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
    std::exit(1);
  }
  std::map<int, nlohmann::json> stepsAfter;  // rescale_steps by the step of the change
  for (const auto& r : metricsRecords(out, "rescale_steps")) stepsAfter[r["step"].get<int>()] = r;
  std::set<int> changedAt;
  for (const auto& e : ev) changedAt.insert(e["step"].get<int>());
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // Per measured change (shrink = 0, placement 3,1 -> 2,2 = 2, grow = 3 of each cycle): the
  // median over the cycles of the step-based pause, of the job's own figure and of the step.
  InPlaceRun run;
  auto measure = [&](int which) {
    std::vector<double> pause, controller, normal, mb, hidden;
    for (int c = 0; c < cycles; ++c) {
      const auto& e = ev[size_t(c * 4 + which)];
      const int s = e["step"];
      double step = medianStep(ends, s + 2, s + 3);
      if (which == 3) {
        // After a grow, the boundary that ends step s + 2 hands the step times over and
        // measures the link (one broadcast of the replica): step s + 3 is left out, and so is
        // any step that ends at a later change.
        std::vector<double> d;
        for (int k = s + 2; k <= s + 6 && d.size() < 3; ++k) {
          if (k == s + 3 || changedAt.count(k - 1) || !ends.count(k) || !ends.count(k - 1)) continue;
          d.push_back(ends.at(k) - ends.at(k - 1));
        }
        if (!d.empty()) step = median(d);
      }
      normal.push_back(step);
      pause.push_back(ends.at(s + 1) - ends.at(s) - step);
      controller.push_back(e["pause_s"].get<double>());
      mb.push_back(e["bytes_moved"].get<double>() / 1e6);
      hidden.push_back(e["startup_s"].get<double>());
      if (which == 3) {
        GrowCycle g;
        g.step = s;
        g.normal = step;
        g.pause = pause.back();
        g.inJob = controller.back();
        g.boundary = e.value("boundary_s", 0.0);
        g.communicators = e.value("communicators_s", 0.0);
        g.layout = e.value("layout_change_s", 0.0);
        g.transfer = e.value("transfer_s", 0.0);
        g.mb = mb.back();
        g.hidden = hidden.back();
        if (stepsAfter.count(s)) {
          const auto& r = stepsAfter[s];
          g.processes = r["processes"].get<std::vector<nlohmann::json>>();
          if (r.contains("link_s") && r["link_s"].get<double>() > 0)
            g.linkMbps = r["link_bytes"].get<double>() / 1e6 / r["link_s"].get<double>();
        }
        run.grows.push_back(g);
      }
    }
    return InPlace{median(pause), median(controller), median(normal), median(mb), median(hidden)};
  };
  run.shrink = measure(0);
  run.placement = measure(2);
  run.grow = measure(3);
  return run;
}

const char* warmUpName(int w) { return w == 0 ? "none" : w == 1 ? "fwd+bwd (before)" : "full (issue 43)"; }

// One job of the invocation: the joiners' warm-up and who sends them the replica.
struct Job {
  int warmUp;
  std::string senders;  // "all" or "1"
  std::string name() const {
    return std::string(warmUpName(warmUp)) + (senders == "1" ? ", 1 sender" : ", all senders");
  }
};

void printGrows(const Job& job, const InPlaceRun& run) {
  std::printf("\ngrow 2 -> 4, joiners' warm-up %s, per cycle:\n", job.name().c_str());
  std::printf("%5s %6s %8s %8s %9s %7s %7s %9s %8s %9s %9s %6s  %s\n", "cycle", "step", "normal s", "pause s",
              "in-job s", "bcast", "comms", "layout s", "xfer s", "xfer MB/s", "link MB/s", "ratio",
              "first/second step per process, wall (cpu) s; S survivor, J joiner");
  int c = 0;
  for (const GrowCycle& g : run.grows) {
    std::ostringstream procs;
    for (const auto& p : g.processes) {
      const auto wall = p["wall_s"].get<std::vector<double>>();
      const auto cpu = p["cpu_s"].get<std::vector<double>>();
      char one[96];
      std::snprintf(one, sizeof one, "%s%d %.2f(%.2f)/%.2f(%.2f)  ", p["joined"].get<bool>() ? "J" : "S",
                    p["rank"].get<int>(), wall.at(0), cpu.at(0), wall.at(1), cpu.at(1));
      procs << one;
    }
    // One copy of the replica reaches every joiner: MB/s of one copy, for the transfer and the
    // link alike (bytes moved count every joiner's copy).
    const double joiners = std::max<double>(1, double(std::count_if(g.processes.begin(), g.processes.end(),
                                                                     [](const nlohmann::json& p) { return p["joined"].get<bool>(); })));
    const double xfer = g.transfer > 0 ? g.mb / joiners / g.transfer : 0.0;
    std::printf("%5d %6d %8.2f %8.3f %9.3f %7.3f %7.3f %9.3f %8.3f %9.0f %9.0f %6.2f  %s\n", ++c, g.step, g.normal,
                g.pause, g.inJob, g.boundary, g.communicators, g.layout, g.transfer, xfer, g.linkMbps,
                g.linkMbps > 0 ? xfer / g.linkMbps : 0.0, procs.str().c_str());
    std::fflush(stdout);
    // Where each process's first step (and second) on the new layout went: fibers and loader
    // built, loader waited for, compute, exchanges (EstExecutor::StepSplit).
    std::ostringstream split;
    for (const auto& p : g.processes) {
      if (!p.contains("data_wait_s")) continue;
      const auto part = [&](const char* key, size_t i) { return p[key].get<std::vector<double>>().at(i); };
      char one[160];
      std::snprintf(one, sizeof one, "%s%d build %.2f wait %.2f/%.2f compute %.2f/%.2f exchange %.2f/%.2f  ",
                    p["joined"].get<bool>() ? "J" : "S", p["rank"].get<int>(), part("start_round_s", 0),
                    part("data_wait_s", 0), part("data_wait_s", 1), part("compute_s", 0), part("compute_s", 1),
                    part("exchange_s", 0), part("exchange_s", 1));
      split << one;
    }
    if (!split.str().empty()) std::printf("%5s first/second step: %s\n", "", split.str().c_str());
  }
}

}  // namespace

int main() {
  auto root = scratch("inplace-rescale");
  auto data = synthData(root, 50000);  // the size of CIFAR-10's training set
  const int cycles = envInt("TL_BENCH_CYCLES", 3);
  std::vector<Job> jobs;
  {
    const auto list = [](const char* name, const char* fallback) {
      std::vector<std::string> items;
      std::istringstream in(std::getenv(name) ? std::getenv(name) : fallback);
      for (std::string item; in >> item;) items.push_back(item);
      return items;
    };
    for (const std::string& w : list("TL_BENCH_WARMUPS", "1 2"))
      for (const std::string& senders : list("TL_BENCH_SENDERS", "all")) jobs.push_back({std::stoi(w), senders});
  }
  std::printf("In-place rescale vs checkpoint-restart, ResNet-18, 4 logical workers, batch 32 each\n\n");
  std::vector<InPlaceRun> runs;
  for (const Job& job : jobs) runs.push_back(inPlaceJob(root, data, cycles, job.warmUp, job.senders));

  const bool ckpt = envInt("TL_BENCH_CKPT", 1) != 0;
  Measured cr[3];
  if (ckpt) {
    cr[0] = checkpointRestart(root, "shrink", data, 4, "", 2, "");
    cr[1] = checkpointRestart(root, "placement", data, 2, " --placement 3,1", 2, " --placement 2,2");
    cr[2] = checkpointRestart(root, "grow", data, 2, "", 4, "");
  }

  std::printf("%-22s %-31s %8s %11s %11s %11s %9s %12s %9s\n", "change", "joiners' warm-up, senders", "step s", "in-place s",
              "(in-job s)", "ckpt-rst s", "speed-up", "start-up hid", "moved MB");
  const char* names[] = {"shrink 4 -> 2", "placement 3,1 -> 2,2", "grow 2 -> 4"};
  for (size_t r = 0; r < runs.size(); ++r) {
    const InPlace ms[] = {runs[r].shrink, runs[r].placement, runs[r].grow};
    for (int i = 0; i < 3; ++i) {
      const InPlace& m = ms[i];
      // Step-time noise can make the step-based figure smaller than the change itself took.
      const double pause = std::max(m.pause, m.controller);
      char hid[32] = "-", crs[32] = "-", speed[32] = "-";
      if (i == 2) std::snprintf(hid, sizeof hid, "%.2f s", m.hidden);
      if (ckpt) {
        std::snprintf(crs, sizeof crs, "%.2f", cr[i].pause);
        std::snprintf(speed, sizeof speed, "%.1fx", cr[i].pause / std::max(pause, 1e-3));
      }
      std::printf("%-22s %-31s %8.2f %11.3f %11.3f %11s %9s %12s %9.1f\n", names[i], jobs[r].name().c_str(), m.normal,
                  m.pause, m.controller, crs, speed, hid, m.megabytes);
    }
  }
  for (size_t r = 0; r < runs.size(); ++r) printGrows(jobs[r], runs[r]);
  // The replica's transfer per job: medians over the cycles of its seconds, of its MB/s (one
  // copy) and of the link's.
  std::printf("\nreplica transfer to the joiners, median over cycles:\n%-31s %8s %10s %10s %7s %9s\n", "job", "xfer s",
              "xfer MB/s", "link MB/s", "ratio", "vs first");
  const auto transferMedian = [](const InPlaceRun& run, int what) {
    std::vector<double> v;
    for (const GrowCycle& g : run.grows) {
      const double joiners = std::max<double>(1, double(std::count_if(g.processes.begin(), g.processes.end(),
                                                                       [](const nlohmann::json& p) { return p["joined"].get<bool>(); })));
      const double mbps = g.transfer > 0 ? g.mb / joiners / g.transfer : 0.0;
      v.push_back(what == 0 ? g.transfer : what == 1 ? mbps : what == 2 ? g.linkMbps : (g.linkMbps > 0 ? mbps / g.linkMbps : 0));
    }
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  for (size_t r = 0; r < runs.size(); ++r)
    std::printf("%-31s %8.3f %10.0f %10.0f %7.2f %8.2fx\n", jobs[r].name().c_str(), transferMedian(runs[r], 0),
                transferMedian(runs[r], 1), transferMedian(runs[r], 2), transferMedian(runs[r], 3),
                transferMedian(runs[r], 0) / std::max(transferMedian(runs[0], 0), 1e-6));
  if (runs.size() > 1) {
    std::printf("\ngrow pause (median over cycles) against the first job's: ");
    for (size_t r = 1; r < runs.size(); ++r)
      std::printf("%s %.2fx  ", jobs[r].name().c_str(),
                  std::max(runs[r].grow.pause, runs[r].grow.controller) /
                      std::max(std::max(runs[0].grow.pause, runs[0].grow.controller), 1e-3));
    std::printf("\n");
  }
  std::printf("\nin-place: median over %d cycles. pause = end of the first step on the new layout - end\n"
              "of the last on the old - a normal step on the new layout (median of the next two);\n"
              "in-job: the change alone, as the job measured it (broadcast to the end of the layout\n"
              "change); speed-up against the larger of the two. Checkpoint-restart: SIGUSR1,\n"
              "checkpoint, exit, mpirun --resume on the new layout. Targets: pause <= 1 s, >= 5x faster.\n"
              "Per cycle: bcast = end of the last old step -> the command received (the boundary's\n"
              "checks and broadcast); comms = joins/splits; layout s includes xfer s, the replica sent\n"
              "to the joiners; MB/s of one copy of the replica (every joiner gets one), for the transfer\n"
              "and for one plain broadcast of as many bytes over the same members two steps later\n"
              "(link; ratio = xfer / link). A grow's normal step leaves out step +3 (its boundary\n"
              "hands the step times over and measures the link).\n",
              cycles);
  return 0;
}
