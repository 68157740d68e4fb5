#include "tools/sched/real/real_scheduler.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/check.h"
#include "common/files.h"
#include "tools/submit/child_process.h"
#include "tools/submit/csv.h"

namespace tl::sched {
namespace {

std::atomic<int> gStopSignal{0};

void onStopSignal(int sig) { gStopSignal.store(sig); }

struct Command {
  pid_t pid = -1;
  RealAction action;
  int from = 0;  // processes before
};

struct Job {
  RealJobState state;
  RealJobRecord record;
  JobResult result;
  pid_t mpirun = -1;
  Command ctl;
  int ctlCount = 0;
  bool arrived = false, finished = false;
  double attained = 0;
  std::string unrealised;  // the last ask tl-sched could not carry out as it stood (events.csv)
  bool stoppedServing = false;  // its control channel went away: it is ending, never rescaled again
  double retryAfter = 0;        // after a failed rescale: no other before this time
};

std::string fixed3(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3f", v);
  return buffer;
}

class Runner {
 public:
  Runner(const std::vector<JobSpec>& trace, SlotTable& slots, Policy& policy,
         const RealRunOptions& o)
      : trace_(trace), slots_(slots), policy_(policy), o_(o) {
    requireRealPolicy(policy.name());
    checkRealTrace(trace, slots);
    for (size_t i = 1; i < trace.size(); ++i)
      TL_CHECK(trace[i - 1].arrival <= trace[i].arrival, "the trace must be sorted by arrival");
    for (const auto& spec : trace) {
      for (char c : spec.id)
        TL_REQUIRE(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-',
                   "job ", spec.id, ": tl-sched names a folder after the job id; use A-Z a-z 0-9 . _ -");
      TL_REQUIRE(spec.id != "." && spec.id != "..", "job id '", spec.id, "' cannot name a folder");
    }
    ensureWritableDir(o.outDir);
    ensureWritableDir(joinPath(o.outDir, "jobs"));
    ensureWritableDir(joinPath(o.outDir, "logs"));
    events_.open(joinPath(o.outDir, "events.csv"));
    TL_REQUIRE(events_.good(), "cannot write ", joinPath(o.outDir, "events.csv"));
    events_ << "time_s,job,event,processes,detail\n";
    jobs_.resize(trace.size());
    for (size_t i = 0; i < trace.size(); ++i) {
      Job& j = jobs_[i];
      j.state.spec = &trace[i];
      j.record.id = j.result.id = trace[i].id;
      j.record.status = "not run";
      j.record.dir = joinPath(joinPath(o.outDir, "jobs"), trace[i].id);
      j.result.arrival = trace[i].arrival;
    }
  }

  RealRunResult run() {
    signal(SIGINT, onStopSignal);
    signal(SIGTERM, onStopSignal);
    t0_ = std::chrono::steady_clock::now();
    double nextTick = 0, last = 0;
    size_t done = 0;
    while (done < jobs_.size()) {
      const double now = seconds();
      if (gStopSignal.load() != 0 || (o_.timeLimitSeconds > 0 && now > o_.timeLimitSeconds)) {
        stopAll(gStopSignal.load() != 0 ? "stopped by a signal" : "time limit reached");
        break;
      }
      account(last, now);
      last = now;
      bool changed = false;
      for (auto& j : jobs_) {
        if (!j.arrived && j.state.spec->arrival <= now) {
          j.arrived = changed = true;
          event(now, j, "arrive", "");
        }
        if (j.mpirun > 0) changed |= pollJob(now, j, done);
        if (j.ctl.pid > 0) changed |= pollCtl(now, j);
        if (j.mpirun > 0 && !j.state.serving && !j.stoppedServing &&
            fileExists(joinPath(j.record.dir, "control.json"))) {
          j.state.serving = changed = true;
          event(now, j, "serving", "");
        }
      }
      if (changed || now >= nextTick) {
        decide(now);
        nextTick = now + o_.tickSeconds;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (auto& j : jobs_)
      if (j.ctl.pid > 0) pollCtlToEnd(j);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    return result();
  }

 private:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

  void event(double t, const Job& j, const std::string& what, const std::string& detail) {
    events_ << fixed3(t) << ',' << submit::csvField(j.record.id) << ',' << what << ','
            << j.state.slots.size() << ',' << submit::csvField(detail) << '\n';
    events_.flush();
  }

  // GPU-seconds and the allocation timeline.
  void account(double from, double to) {
    std::vector<int> used(slots_.kinds().size(), 0);
    for (auto& j : jobs_) {
      j.result.gpuSeconds += double(j.state.slots.size()) * (to - from);
      j.attained += double(j.state.slots.size()) * (to - from);
      for (int s : j.state.slots) ++used[size_t(slots_.kindOf(s))];
    }
    if (timeline_.empty() || timeline_.back().used != used) timeline_.push_back({to, used});
  }

  bool pollJob(double now, Job& j, size_t& done) {
    const submit::ChildExit e = submit::pollChild(j.mpirun);
    if (!e.exited) return false;
    j.mpirun = -1;
    j.finished = true;
    ++done;
    j.result.finish = now;
    j.record.exitCode = e.exitCode;
    j.record.processes = int(j.state.slots.size());
    readOutcome(j);
    event(now, j, "finish", j.record.status + (e.exitCode ? " exit " + std::to_string(e.exitCode) : ""));
    for (int s : j.state.slots) slots_.release(s, j.record.id);
    j.state.slots.clear();
    j.state.busy = false;
    return true;
  }

  void readOutcome(Job& j) {
    j.record.status = "failed";
    const std::string summaryPath = joinPath(j.record.dir, "summary.json");
    if (j.record.exitCode == 0 && fileExists(summaryPath)) {
      const auto s = nlohmann::json::parse(readFile(summaryPath), nullptr, false);
      if (s.is_object() && s.contains("params_sha256")) {
        j.record.paramsSha256 = s["params_sha256"].get<std::string>();
        j.record.status = "done";
      }
    }
    std::ifstream metrics(joinPath(j.record.dir, "metrics.jsonl"));
    for (std::string line; std::getline(metrics, line);) {
      if (line.find("\"rescale\"") == std::string::npos) continue;
      const auto r = nlohmann::json::parse(line, nullptr, false);
      if (r.is_object() && r.value("type", "") == "rescale" && r.contains("pause_s"))
        j.record.pauses.push_back(r["pause_s"].get<double>());
    }
  }

  bool pollCtl(double now, Job& j) {
    const submit::ChildExit e = submit::pollChild(j.ctl.pid);
    if (!e.exited) return false;
    const RealAction a = j.ctl.action;
    j.ctl.pid = -1;
    j.state.busy = false;
    if (j.finished) {
      // The job ended first: the slots it held are back; those of a grow are given back now.
      if (a.kind == RealAction::Grow)
        for (int s : a.slots) slots_.release(s, j.record.id);
      return true;
    }
    if (e.exitCode == 0) {
      ++j.record.rescales;
      ++j.result.rescales;
      if (a.kind == RealAction::Grow) {
        j.state.slots.insert(j.state.slots.end(), a.slots.begin(), a.slots.end());
      } else {
        for (auto r = a.removeRanks.rbegin(); r != a.removeRanks.rend(); ++r) {
          slots_.release(j.state.slots[size_t(*r)], j.record.id);
          j.state.slots.erase(j.state.slots.begin() + *r);
        }
      }
      event(now, j, "rescaled", std::to_string(j.ctl.from) + " -> " + std::to_string(j.state.slots.size()));
    } else {
      ++j.record.failedRescales;
      // A job that has finished training refuses (or no longer serves control): it is left
      // to end. Any other failure is retried no sooner than a tick later (not at once: the
      // failure is itself an event, and an immediate retry would repeat every poll).
      if (!fileExists(joinPath(j.record.dir, "control.json"))) {
        j.state.serving = false;
        j.stoppedServing = true;
      }
      j.retryAfter = now + std::max(1.0, o_.tickSeconds);
      if (a.kind == RealAction::Grow)
        for (int s : a.slots) slots_.release(s, j.record.id);
      event(now, j, "rescale failed", "tl-ctl exit " + std::to_string(e.exitCode) + ", see logs/" +
                                          j.record.id + ".ctl" + std::to_string(j.ctlCount) + ".log");
    }
    return true;
  }

  // A tl-ctl still waiting when the last job ended: it fails (the job is gone) and ends.
  void pollCtlToEnd(Job& j) {
    submit::waitChild(j.ctl.pid);
    j.ctl.pid = -1;
  }

  void decide(double now) {
    std::vector<size_t> active;
    std::vector<JobView> views;
    std::vector<RealJobState> states;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      Job& j = jobs_[i];
      if (!j.arrived || j.finished) continue;
      active.push_back(i);
      JobView v;
      v.spec = j.state.spec;
      v.attainedGpuSeconds = j.attained;
      v.current = heldBy(j.state, slots_);
      v.started = j.mpirun > 0;
      views.push_back(v);
      states.push_back(j.state);
      if (now < j.retryAfter) states.back().busy = true;  // left alone after a failed rescale
    }
    if (active.empty()) return;
    const auto want = policy_.allocate(now, views);
    std::vector<std::string> unrealised;
    const auto actions = realise(want, states, slots_, &unrealised);
    for (size_t i = 0; i < active.size(); ++i) {
      Job& j = jobs_[active[i]];
      if (states[i].busy || unrealised[i] == j.unrealised) continue;
      // Recorded once per change: the policy asked for what a real job cannot do.
      j.unrealised = unrealised[i];
      if (!j.unrealised.empty()) event(now, j, "unrealisable", j.unrealised);
    }
    for (const RealAction& a : actions) carryOut(now, jobs_[active[a.job]], a);
  }

  void carryOut(double now, Job& j, const RealAction& a) {
    const std::string log = joinPath(joinPath(o_.outDir, "logs"), j.record.id);
    if (a.kind == RealAction::Start) {
      const SlotKind& kind = slots_.kinds()[size_t(slots_.kindOf(a.slots[0]))];
      j.state.slots = a.slots;
      j.record.kind = kind.name;
      j.result.start = now;
      j.mpirun = submit::startChild(
          {launchArgv(o_.job, *j.state.spec, kind, int(a.slots.size()), j.record.dir), {}, log + ".log"});
      event(now, j, "start", kind.name);
      return;
    }
    const int held = int(j.state.slots.size());
    j.ctl.action = a;
    j.ctl.from = held;
    j.state.busy = true;
    ++j.ctlCount;
    const auto argv = a.kind == RealAction::Grow
                          ? growArgv(o_.job, j.record.dir, held + int(a.slots.size()))
                          : shrinkArgv(o_.job, j.record.dir, a.removeRanks);
    j.ctl.pid = submit::startChild({argv, {}, log + ".ctl" + std::to_string(j.ctlCount) + ".log"});
    const int to = a.kind == RealAction::Grow ? held + int(a.slots.size()) : held - int(a.removeRanks.size());
    event(now, j, a.kind == RealAction::Grow ? "grow" : "shrink",
          std::to_string(held) + " -> " + std::to_string(to));
  }

  void stopAll(const std::string& why) {
    for (auto& j : jobs_) {
      for (pid_t p : {j.mpirun, j.ctl.pid})
        if (p > 0) ::kill(-p, SIGTERM);
    }
    for (auto& j : jobs_) {
      for (pid_t* p : {&j.mpirun, &j.ctl.pid})
        if (*p > 0) {
          submit::waitChild(*p);
          *p = -1;
        }
      if (!j.finished) {
        j.record.status = "failed";
        j.finished = true;
        event(seconds(), j, "stopped", why);
      }
    }
  }

  RealRunResult result() {
    RealRunResult r;
    for (auto& j : jobs_) {
      r.run.jobs.push_back(j.result);
      r.records.push_back(j.record);
    }
    r.run.timeline = timeline_;
    r.run.timeline.push_back({seconds(), std::vector<int>(slots_.kinds().size(), 0)});
    r.run.summary = summarise(r.run.jobs, policy_.name() + " (real)", slots_.size());
    return r;
  }

  const std::vector<JobSpec>& trace_;
  SlotTable& slots_;
  Policy& policy_;
  RealRunOptions o_;
  std::vector<Job> jobs_;
  std::vector<AllocationSample> timeline_;
  std::ofstream events_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace

bool RealRunResult::allDone() const {
  return std::all_of(records.begin(), records.end(), [](const auto& r) { return r.status == "done"; });
}

RealRunResult runReal(const std::vector<JobSpec>& trace, SlotTable& slots, Policy& policy,
                      const RealRunOptions& options) {
  return Runner(trace, slots, policy, options).run();
}

std::string realJobsCsv(const RealRunResult& result) {
  std::ostringstream out;
  out << "id,kind,status,exit_code,arrival_s,start_s,finish_s,jct_s,processes,rescales,"
         "failed_rescales,mean_pause_s,params_sha256\n";
  for (size_t i = 0; i < result.records.size(); ++i) {
    const auto& r = result.records[i];
    const auto& j = result.run.jobs[i];
    double pause = 0;
    for (double p : r.pauses) pause += p;
    if (!r.pauses.empty()) pause /= double(r.pauses.size());
    out << submit::csvField(r.id) << ',' << r.kind << ',' << r.status << ',' << r.exitCode << ','
        << fixed3(j.arrival) << ',' << fixed3(j.start) << ',' << fixed3(j.finish) << ','
        << fixed3(j.jct()) << ',' << r.processes << ',' << r.rescales << ',' << r.failedRescales
        << ',' << fixed3(pause) << ',' << r.paramsSha256 << '\n';
  }
  return out.str();
}

}  // namespace tl::sched
