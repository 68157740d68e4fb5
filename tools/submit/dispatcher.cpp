#include "tools/submit/dispatcher.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/check.h"
#include "common/files.h"
#include "common/signals.h"
#include "tools/submit/child_process.h"
#include "tools/submit/launch_check.h"

namespace tl::submit {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(20);

std::atomic<int> gInterrupts{0};
void onInterrupt(int) { gInterrupts.fetch_add(1); }

struct Running {
  size_t index;
  pid_t pid;
};

class Dispatch {
 public:
  Dispatch(const std::vector<SubmitJob>& jobs, const DispatchOptions& options)
      : jobs_(jobs),
        options_(options),
        outcomes_(jobs.size()),
        begin_(SteadyClock::now()),
        wallBegin_(std::chrono::system_clock::now()) {}

  std::vector<JobOutcome> run() {
    auto lastSubmit = begin_;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      auto earliest = lastSubmit + std::chrono::duration_cast<SteadyClock::duration>(
                                       std::chrono::duration<double>(jobs_[i].submitInterval));
      if (options_.dryRun) earliest = begin_;  // nothing runs, so nothing to space out
      while (!stopping() &&
             !(SteadyClock::now() >= earliest && (options_.background || running_.empty()))) {
        tick();
      }
      if (stopping()) break;
      lastSubmit = SteadyClock::now();
      start(i);
    }
    while (!running_.empty()) tick();
    for (auto& o : outcomes_) {
      if (!o.started && o.note.empty())
        o.note = stopping() ? "interrupted before start" : "not started";
    }
    return outcomes_;
  }

 private:
  bool stopping() const { return forwarded_ > 0; }

  void say(const std::string& line) const {
    if (options_.log) {
      options_.log(line);
    } else {
      std::printf("tl-submit: %s\n", line.c_str());
      std::fflush(stdout);
    }
  }

  double secondsSinceBegin(SteadyClock::time_point t) const {
    return std::chrono::duration<double>(t - begin_).count();
  }

  // Reaps finished jobs, forwards new interrupts, sleeps one poll period.
  void tick() {
    int interrupts = options_.interrupts();
    for (; forwarded_ < interrupts; ++forwarded_) {
      say(tl::str("interrupted: no new jobs; forwarding SIGINT to ", running_.size(),
                  " running job(s)"));
      for (const auto& r : running_) ::kill(r.pid, SIGINT);
    }
    for (size_t k = 0; k < running_.size();) {
      ChildExit e = pollChild(running_[k].pid);
      if (!e.exited) {
        ++k;
        continue;
      }
      finish(running_[k].index, e);
      running_.erase(running_.begin() + long(k));
    }
    if (!running_.empty() || !stopping()) std::this_thread::sleep_for(kPoll);
  }

  void start(size_t i) {
    const SubmitJob& job = jobs_[i];
    JobOutcome& o = outcomes_[i];
    JobCommand command = jobCommand(options_.mpirun, job);
    std::string env =
        command.setEnv.empty() ? "" : "CUDA_VISIBLE_DEVICES=" + job.cudaVisibleDevices() + " ";
    say(tl::str("job ", job.name, " (line ", job.line, "): ", env, shellQuoted(command.argv)));
    auto now = SteadyClock::now();
    o.start = o.end =
        wallBegin_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(now - begin_);
    o.startSeconds = o.endSeconds = secondsSinceBegin(now);
    if (options_.dryRun) {
      o.note = "dry run";
      return;
    }
    try {
      std::filesystem::create_directories(job.outputFolder);
      std::filesystem::remove(
          joinPath(job.outputFolder, "summary.json"));  // never report a stale one
      pid_t pid = startChild({command.argv, command.setEnv, joinPath(job.outputFolder, "job.log")});
      o.started = true;
      running_.push_back({i, pid});
    } catch (const std::exception& e) {
      o.note = tl::str("could not start: ", e.what());
      say(tl::str("job ", job.name, " (line ", job.line, ") ", o.note));
    }
  }

  void finish(size_t i, const ChildExit& e) {
    JobOutcome& o = outcomes_[i];
    auto now = SteadyClock::now();
    o.end =
        wallBegin_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(now - begin_);
    o.endSeconds = secondsSinceBegin(now);
    o.exitCode = e.exitCode;
    o.signal = e.signal;
    const std::string log = joinPath(jobs_[i].outputFolder, "job.log");
    if (o.exitCode == 0) readSummaryNumbers(jobs_[i].outputFolder, o);
    // A failed job's own error line says why; the log has the rest.
    const std::string error = o.exitCode == 0 ? "" : errorLineOfLog(log);
    say(tl::str("job ", jobs_[i].name, " ended: ", o.status(), " after ", o.completionSeconds(),
                " s", error.empty() ? "" : ": " + error, " (log: ", log, ")"));
  }

  const std::vector<SubmitJob>& jobs_;
  const DispatchOptions& options_;
  std::vector<JobOutcome> outcomes_;
  std::vector<Running> running_;
  int forwarded_ = 0;
  SteadyClock::time_point begin_;
  std::chrono::system_clock::time_point wallBegin_;
};

}  // namespace

std::string JobOutcome::status() const {
  if (!started) return note.empty() ? "not started" : note;
  if (signal != 0) return tl::str("signal ", signal);
  return std::to_string(exitCode);
}

void readSummaryNumbers(const std::string& folder, JobOutcome& outcome) {
  std::string path = joinPath(folder, "summary.json");
  try {
    auto summary = nlohmann::json::parse(readFile(path));
    outcome.imagesPerSecond = summary.at("images_per_s").get<double>();
    outcome.finalLoss = summary.at("final_loss").get<double>();
    outcome.hasNumbers = true;
  } catch (const std::exception& e) {
    outcome.note = tl::str("no numbers: ", path, ": ", e.what());
  }
}

std::vector<JobOutcome> runJobs(const std::vector<SubmitJob>& jobs,
                                const DispatchOptions& options) {
  return Dispatch(jobs, options).run();
}

void installInterruptCounter() { handleSignals({SIGINT, SIGTERM}, onInterrupt); }

int interruptsReceived() { return gInterrupts.load(); }

}  // namespace tl::submit
