// bench_coordinator: a node's total images/s with three concurrent jobs whose loader pools are
// sized (a) by the node coordinator (a real tl-coordinator process and one client per job),
// (b) by an equal split of the loader cores, (c) by the best static split, found by measuring
// every split briefly and then measuring the winner properly. Ratios are against (c). Every
// measurement starts its jobs afresh and counts from 0.5 s on (queues filled); the coordinated
// one thus includes the coordinator's exploration, and is also shown from 3 s on.
//
// Self-contained mode (default): three in-process synthetic jobs. Their loader workers do real
// work per image: a calibrated CPU loop (a fixed amount of work, so contention makes it take
// longer) plus a wait standing for storage reads; a simulated device consumes batches at C
// images/s by sleeping. All threads compete for this machine's cores.
//
// Process mode (--commands FILE): one shell command per line, one line per job, run
// concurrently for each measurement; {workers} becomes "auto" (coordinator) or a number,
// {run_dir} the coordinator's run directory, {out} a fresh output folder and {steps} the
// --probe-steps or --steps value. A job's images/s is read from {out}/summary.json
// ("images_per_s"), e.g. tl-launch ... --device sim:RATE --workers {workers}
// --coordinator-dir {run_dir} --output-dir {out} --steps {steps}.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/check.h"
#include "common/files.h"
#include "coordinator/allocator.h"
#include "coordinator/coordinator_client.h"
#include "coordinator/ensure_coordinator.h"
#include "common/cli/cli.h"

namespace {

using namespace tl;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
void sleepSeconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// A fixed amount of CPU work per call, calibrated once on this machine.
class CpuWork {
 public:
  static void calibrate() {
    const uint64_t n = 4'000'000;
    double best = 1e9;
    for (int i = 0; i < 5; ++i) {  // the least disturbed of a few runs
      auto t0 = Clock::now();
      spin(n);
      best = std::min(best, since(t0));
    }
    iterationsPerMs_ = double(n) / (best * 1000);
  }
  static void run(double ms) { spin(uint64_t(ms * iterationsPerMs_)); }

 private:
  static void spin(uint64_t n) {
    uint64_t x = 88172645463325252ull;
    for (uint64_t i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink_ = x;
  }
  static inline double iterationsPerMs_ = 1;
  static inline volatile uint64_t sink_ = 0;
};

struct JobShape {
  std::string name;
  double cpuMs, ioMs, deviceRate;
};

struct Totals {
  double busy = 0, compute = 0, wait = 0;
  int64_t produced = 0, consumed = 0;
};

// One synthetic job: a resizable pool of loader threads filling a bounded queue, and a device
// thread taking batches from it. Threading: setWorkers/totals from one controlling thread.
class SyntheticJob {
 public:
  SyntheticJob(JobShape shape, int workers) : shape_(std::move(shape)) {
    device_ = std::thread([this] { deviceLoop(); });
    setWorkers(workers);
  }
  ~SyntheticJob() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (auto& t : threads_) t.join();
    device_.join();
  }
  void setWorkers(int n) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      target_ = n;
    }
    changed_.notify_all();
    while (int(threads_.size()) > n) {  // retired workers finish their image first
      threads_.back().join();
      threads_.pop_back();
    }
    while (int(threads_.size()) < n) {
      int index = int(threads_.size());
      threads_.emplace_back([this, index] { workerLoop(index); });
    }
  }
  int workers() const { return int(threads_.size()); }
  Totals totals() {
    std::lock_guard<std::mutex> lock(mutex_);
    return totals_;
  }

 private:
  static constexpr int kBatch = 8, kCapacity = 4 * kBatch;
  void workerLoop(int index) {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock,
                      [&] { return stop_ || index >= target_ || queued_ + inFlight_ < kCapacity; });
        if (stop_ || index >= target_) return;
        ++inFlight_;
      }
      auto t0 = Clock::now();
      CpuWork::run(shape_.cpuMs);
      sleepSeconds(shape_.ioMs / 1000);
      double busy = since(t0);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --inFlight_;
        ++queued_;
        ++totals_.produced;
        totals_.busy += busy;
      }
      changed_.notify_all();
    }
  }
  void deviceLoop() {
    for (;;) {
      auto t0 = Clock::now();
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || queued_ >= kBatch; });
        if (stop_) return;
        queued_ -= kBatch;
        totals_.wait += since(t0);
      }
      changed_.notify_all();
      auto t1 = Clock::now();
      sleepSeconds(kBatch / shape_.deviceRate);
      std::lock_guard<std::mutex> lock(mutex_);
      totals_.compute += since(t1);
      totals_.consumed += kBatch;
    }
  }

  JobShape shape_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int target_ = 0, queued_ = 0, inFlight_ = 0;
  bool stop_ = false;
  Totals totals_;
  std::vector<std::thread> threads_;
  std::thread device_;
};

struct Options {
  int budget = 6;
  double seconds = 20, probeSeconds = 1.5, windowSeconds = 0.25, singleSeconds = 2;
  int repeats = 2;
  std::string jobs = "0.3:1.7:1400,1.0:3.0:300,0.25:4.75:900";
  std::string coordinator, commands;
  int steps = 300, probeSteps = 60;
};

std::vector<JobShape> parseJobs(const std::string& text) {
  std::vector<JobShape> shapes;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    std::stringstream fields(item);
    std::string cpu, io, rate;
    TL_REQUIRE(std::getline(fields, cpu, ':') && std::getline(fields, io, ':') &&
                   std::getline(fields, rate, ':'),
               "--jobs: expected CPU_MS:IO_MS:DEVICE_RATE per job, got '", item, "'");
    shapes.push_back({std::string(1, char('A' + shapes.size())),
                      cli::parseDouble(cpu, "--jobs cpu ms"), cli::parseDouble(io, "--jobs io ms"),
                      cli::parseDouble(rate, "--jobs device rate")});
  }
  TL_REQUIRE(!shapes.empty(), "--jobs: no jobs");
  return shapes;
}

// Every mode starts its jobs, lets the queues fill for kWarmupSeconds, then counts images.
constexpr double kWarmupSeconds = 0.5;
// The coordinated row is also reported from this long after the warm-up on: exploring is over.
constexpr double kSettleSeconds = 3;

int64_t consumed(const std::vector<std::unique_ptr<SyntheticJob>>& jobs) {
  int64_t total = 0;
  for (auto& job : jobs) total += job->totals().consumed;
  return total;
}

double measureStatic(const std::vector<JobShape>& shapes, const std::vector<int>& split,
                     double seconds) {
  std::vector<std::unique_ptr<SyntheticJob>> jobs;
  for (size_t j = 0; j < shapes.size(); ++j)
    jobs.push_back(std::make_unique<SyntheticJob>(shapes[j], split[j]));
  sleepSeconds(kWarmupSeconds);
  int64_t start = consumed(jobs);
  sleepSeconds(seconds);
  return double(consumed(jobs) - start) / seconds;
}

struct Coordinated {
  double whole = 0, settled = 0;  // images/s: all `seconds`, and its part after kSettleSeconds
  std::vector<int> finalSplit;
};

// A fresh tl-coordinator decides from the jobs' start on; its exploration counts.
Coordinated measureCoordinated(const std::vector<JobShape>& shapes, const Options& o, int round) {
  const std::string runDir =
      "/tmp/tl-bench-coordinator-" + std::to_string(::getpid()) + "-" + std::to_string(round);
  std::filesystem::remove_all(runDir);
  coordinator::EnsureCoordinatorOptions start;
  start.extraArgs = {"--loader-cores", std::to_string(o.budget), "--idle-exit-seconds", "2"};
  coordinator::ensureCoordinator(runDir, o.coordinator, start);
  std::vector<coordinator::JobDemand> limits(shapes.size(), coordinator::JobDemand{{}, 1, 16});
  std::vector<int> initial = coordinator::equalSplit(limits, o.budget);
  std::vector<std::unique_ptr<SyntheticJob>> jobs;
  std::vector<std::unique_ptr<coordinator::CoordinatorClient>> clients;
  std::vector<Totals> window;
  for (size_t j = 0; j < shapes.size(); ++j) {
    jobs.push_back(std::make_unique<SyntheticJob>(shapes[j], initial[j]));
    clients.push_back(std::make_unique<coordinator::CoordinatorClient>(coordinator::CoordinatorClientOptions{
        runDir, shapes[j].name + "/0", 0, initial[j], 1, 16, "", 0}));
    TL_CHECK(clients.back()->connect(), "cannot reach the coordinator in ", runDir);
    window.push_back(jobs.back()->totals());
  }
  auto t0 = Clock::now();
  int64_t atWarm = -1, atSettled = -1;
  double settledAt = 0;
  while (since(t0) < kWarmupSeconds + o.seconds) {
    sleepSeconds(o.windowSeconds);
    for (size_t j = 0; j < jobs.size(); ++j) {
      Totals now = jobs[j]->totals(), &was = window[j];
      clients[j]->report({jobs[j]->workers(), now.busy - was.busy, now.produced - was.produced},
                         {now.compute - was.compute, now.consumed - was.consumed},
                         now.wait - was.wait);
      if (auto w = clients[j]->pendingWorkers()) jobs[j]->setWorkers(*w);
      window[j] = jobs[j]->totals();  // a window covers one pool size
    }
    if (atWarm < 0 && since(t0) >= kWarmupSeconds) atWarm = consumed(jobs);
    if (atSettled < 0 && since(t0) >= kWarmupSeconds + kSettleSeconds) {
      atSettled = consumed(jobs);
      settledAt = since(t0);
    }
  }
  Coordinated result;
  const double end = since(t0);
  const int64_t last = consumed(jobs);
  result.whole = double(last - atWarm) / (end - kWarmupSeconds);
  result.settled = atSettled < 0 ? 0 : double(last - atSettled) / (end - settledAt);
  for (auto& job : jobs) result.finalSplit.push_back(job->workers());
  return result;
}

std::string splitText(const std::vector<int>& split) {
  std::string text;
  for (int w : split) text += (text.empty() ? "" : ",") + std::to_string(w);
  return text;
}

// Process mode: run every command once, concurrently, and sum their reported images/s.
double runCommands(const std::vector<std::string>& commands, const std::string& workers,
                   const std::vector<int>* split, const std::string& runDir, int steps, int round) {
  std::vector<std::string> outs;
  std::string script;
  for (size_t j = 0; j < commands.size(); ++j) {
    std::string out =
        "/tmp/tl-bench-coordinator-out/" + std::to_string(round) + "-" + std::to_string(j);
    std::filesystem::remove_all(out);
    std::filesystem::create_directories(out);
    std::string cmd = commands[j];
    auto replace = [&](const std::string& key, const std::string& value) {
      for (size_t p; (p = cmd.find(key)) != std::string::npos;) cmd.replace(p, key.size(), value);
    };
    replace("{workers}", split ? std::to_string((*split)[j]) : workers);
    replace("{run_dir}", runDir);
    replace("{out}", out);
    replace("{steps}", std::to_string(steps));
    script += "(" + cmd + ") >" + out + "/log 2>&1 &\n";
    outs.push_back(out);
  }
  TL_REQUIRE(std::system((script + "wait\n").c_str()) == 0, "process-mode jobs failed to run");
  double total = 0;
  for (const auto& out : outs) {
    auto summary = nlohmann::json::parse(readFile(joinPath(out, "summary.json")));
    total += summary.at("images_per_s").get<double>();
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o;
    o.coordinator = (std::filesystem::canonical("/proc/self/exe").parent_path().parent_path() /
                     "launcher" / "tl-coordinator")
                        .string();
    auto app = cli::makeApp("bench_coordinator",
                            "Node images/s: coordinator vs equal vs best static split.");
    cli::addInt(*app, "--budget", &o.budget, "loader cores split among the jobs", 1, 64);
    cli::addDouble(*app, "--seconds", &o.seconds, "length of each proper measurement", 0.5);
    cli::addInt(*app, "--repeats", &o.repeats, "rounds of the three proper measurements (averaged)",
                1);
    cli::addDouble(*app, "--probe-seconds", &o.probeSeconds,
                   "length of each split's probe in the search", 0.2);
    cli::addDouble(*app, "--window-seconds", &o.windowSeconds,
                   "report window of the coordinated jobs", 0.05);
    cli::addDouble(*app, "--single-seconds", &o.singleSeconds, "per size in the single-job table",
                   0.2);
    app->add_option("--jobs", o.jobs, "CPU_MS:IO_MS:DEVICE_RATE per job, comma-separated");
    app->add_option("--coordinator", o.coordinator, "tl-coordinator binary");
    app->add_option("--commands", o.commands, "process mode: file with one job command per line");
    cli::addInt(*app, "--steps", &o.steps, "process mode: {steps} of proper runs", 1);
    cli::addInt(*app, "--probe-steps", &o.probeSteps, "process mode: {steps} of search probes", 1);
    if (!cli::parse(*app, argc, argv)) return 0;
    spdlog::set_level(spdlog::level::warn);  // the clients' "registered" lines are noise here
    std::vector<JobShape> shapes = parseJobs(o.jobs);
    std::vector<std::string> commands;
    if (!o.commands.empty()) {
      std::istringstream lines(readFile(o.commands));
      for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line[0] != '#') commands.push_back(line);
      }
      shapes.resize(commands.size(), shapes.back());
    }
    std::vector<coordinator::JobDemand> limits(shapes.size(), coordinator::JobDemand{{}, 1, 16});
    CpuWork::calibrate();
    std::printf(
        "bench_coordinator: %zu jobs, %d loader cores to split, %u hardware cores, "
        "%.1f s per measurement, mean of %d rounds\n",
        shapes.size(), o.budget, std::thread::hardware_concurrency(), o.seconds, o.repeats);
    if (commands.empty()) {
      std::printf("%-4s %8s %8s %14s\n", "job", "cpu ms", "io ms", "device img/s");
      for (auto& s : shapes)
        std::printf("%-4s %8.2f %8.2f %14.0f\n", s.name.c_str(), s.cpuMs, s.ioMs, s.deviceRate);
    }
    const std::string runDir = "/tmp/tl-bench-coordinator-" + std::to_string(::getpid());
    auto measure = [&](const std::vector<int>& split, double seconds, int steps, int round) {
      if (!commands.empty()) return runCommands(commands, "", &split, runDir, steps, round);
      return measureStatic(shapes, split, seconds);
    };
    int round = 0;
    if (commands.empty()) {
      std::printf("\nsearch: every split, %.1f s each\n", o.probeSeconds);
    } else {
      std::printf("\nsearch: every split, {steps} = %d\n", o.probeSteps);
    }
    std::vector<int> bestProbe;
    double bestProbeRate = -1;
    coordinator::enumerateSplits(limits, o.budget, [&](const std::vector<int>& split) {
      double rate = measure(split, o.probeSeconds, o.probeSteps, round++);
      std::printf("  %-10s %8.0f images/s\n", splitText(split).c_str(), rate);
      if (rate > bestProbeRate) {
        bestProbe = split;
        bestProbeRate = rate;
      }
    });
    // The three contenders take turns, so a change in the machine's load hits them alike.
    std::vector<int> equal = coordinator::equalSplit(limits, o.budget), finalSplit;
    double best = 0, even = 0, coordinated = 0, settled = 0;
    for (int r = 0; r < o.repeats; ++r) {
      best += measure(bestProbe, o.seconds, o.steps, round++) / o.repeats;
      even += measure(equal, o.seconds, o.steps, round++) / o.repeats;
      if (commands.empty()) {
        Coordinated c = measureCoordinated(shapes, o, round++);
        coordinated += c.whole / o.repeats;
        settled += c.settled / o.repeats;
        finalSplit = c.finalSplit;
      } else {
        coordinator::EnsureCoordinatorOptions start;
        start.extraArgs = {"--loader-cores", std::to_string(o.budget)};
        coordinator::ensureCoordinator(runDir, o.coordinator, start);
        coordinated += runCommands(commands, "auto", nullptr, runDir, o.steps, round++) / o.repeats;
      }
    }
    std::printf("\n%-26s %-10s %10s %16s\n", "loader pools sized by", "split", "images/s",
                "vs best static");
    std::printf("%-26s %-10s %10.0f %16.3f\n", "node coordinator",
                (finalSplit.empty() ? "auto" : ("->" + splitText(finalSplit))).c_str(), coordinated,
                coordinated / best);
    if (settled > 0) {
      std::printf("%-26s %-10s %10.0f %16.3f\n", "  same, after 3 s", "", settled,
                  settled / best);
    }
    std::printf("%-26s %-10s %10.0f %16.3f\n", "equal split", splitText(equal).c_str(), even,
                even / best);
    std::printf("%-26s %-10s %10.0f %16.3f\n", "best static split", splitText(bestProbe).c_str(),
                best, 1.0);
    bool pass = coordinated >= 0.95 * best && coordinated > even;
    std::printf("target: coordinator >= 0.95 x best static and > equal split: %s\n",
                pass ? "met" : "NOT met");
    if (commands.empty()) {
      std::printf("coordinator decisions: /tmp/tl-bench-coordinator-%d-*/coordinator.log\n",
                  int(::getpid()));
    }

    if (commands.empty()) {  // how well the model extrapolates from the sizes it explores
      const JobShape& shape = shapes[0];
      coordinator::ThroughputFitter fitter;
      SyntheticJob job(shape, 1);
      for (int w : {1, 2}) {
        job.setWorkers(w);
        sleepSeconds(0.3);
        for (int i = 0; i < 4; ++i) {
          Totals a = job.totals();
          sleepSeconds(o.singleSeconds / 4);
          Totals b = job.totals();
          fitter.addLoader({w, b.busy - a.busy, b.produced - a.produced});
          fitter.addCompute({b.compute - a.compute, b.consumed - a.consumed});
        }
      }
      coordinator::ThroughputModel model = fitter.fit();
      std::printf(
          "\nsingle job %s alone, model fitted from w = 1, 2: a = %.3g s, b = %.3g s, C = %.0f/s\n",
          shape.name.c_str(), model.a, model.b, model.computeRate);
      std::printf("%-3s %12s %12s %8s\n", "w", "measured", "predicted", "error");
      for (int w = 1; w <= 4; ++w) {
        job.setWorkers(w);
        sleepSeconds(0.3);
        int64_t a = job.totals().consumed;
        sleepSeconds(o.singleSeconds);
        double measured = double(job.totals().consumed - a) / o.singleSeconds;
        double predicted = model.predict(w);
        std::printf("%-3d %12.0f %12.0f %+7.1f%%\n", w, measured, predicted,
                    100 * (predicted - measured) / measured);
      }
    }
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "bench_coordinator: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_coordinator: internal error: %s\n", e.what());
    return 1;
  }
}
