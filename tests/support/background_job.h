// A tl-launch job running in the background under mpirun, and tl-ctl requests sent to it while
// it trains: the harness of the in-place rescale tests. Header-only; the including test is an
// e2e test with TOOLS tl-launch tl-ctl (TL_LAUNCH_BIN, TL_CTL_BIN).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/run_command.h"

namespace tl::testing {

// The "rescale" records of a job's metrics.jsonl, in order.
inline std::vector<nlohmann::json> rescaleEvents(const std::string& out) {
  std::vector<nlohmann::json> events;
  std::ifstream in(out + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"rescale\"") != std::string::npos) events.push_back(nlohmann::json::parse(line));
  }
  return events;
}

// A job running in the background: `mpirun ... tl-launch` under a time limit, its exit status
// written to DIR/rc when it ends.
class BackgroundJob {
 public:
  BackgroundJob(int np, const std::string& flags, const std::string& dir, std::string mpirun = "")
      : dir_(dir) {
    if (mpirun.empty()) mpirun = mpirunPrefix(np);
    const std::string command = "(timeout -k 5 300 " + mpirun + TL_LAUNCH_BIN + flags +
                                " >" + dir + "/job.out 2>" + dir + "/job.err; echo $? >" + dir + "/rc.tmp; mv " + dir + "/rc.tmp " + dir +
                                "/rc) &";  // rc appears whole: ended() may be asked while it is written
    EXPECT_EQ(std::system(command.c_str()), 0);
  }
  ~BackgroundJob() { wait(); }
  // Waits until the job serves its control channel in `out` (or ends).
  bool waitForControl(const std::string& out) {
    for (int i = 0; i < 1200; ++i) {
      if (std::filesystem::exists(out + "/control.json")) return true;
      if (ended()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  bool ended() const { return std::filesystem::exists(dir_ + "/rc"); }
  int wait() {
    for (int i = 0; i < 6000 && !ended(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return ended() ? std::stoi(slurp(dir_ + "/rc")) : -1;
  }
  std::string log() const { return slurp(dir_ + "/job.out") + slurp(dir_ + "/job.err"); }

 private:
  std::string dir_;
};

// How many control requests the job `out` has taken so far (its status's requests_received),
// or -1 when the status cannot be read.
inline int64_t requestsReceived(const std::string& out, const std::string& scratch) {
  auto r = runCommand(std::string(TL_CTL_BIN) + " status " + out + " --json", 60, scratch);
  if (r.exitCode != 0) return -1;
  try {
    return nlohmann::json::parse(r.out).value("requests_received", int64_t{-1});
  } catch (const std::exception&) {
    return -1;
  }
}

// tl-ctl commands against job `out`, each started once the job has taken the one before (its
// status counts requests received), so the job queues them in this order whatever the load,
// while earlier ones still wait for their step; results in the same order.
inline std::vector<CommandResult> queueCommands(const std::vector<std::string>& commands, const std::string& out,
                                                const std::string& dir) {
  std::vector<std::thread> threads;
  std::vector<CommandResult> results(commands.size());
  const std::string statusScratch = freshDir(std::filesystem::path(dir).filename().string() + "_status");
  const int64_t before = requestsReceived(out, statusScratch);
  EXPECT_GE(before, 0) << "the job's status has no requests_received";
  for (size_t i = 0; i < commands.size(); ++i) {
    const std::string scratch = freshDir(std::filesystem::path(dir).filename().string() + "_ctl" + std::to_string(i));
    threads.emplace_back(
        [&, i, scratch] { results[i] = runCommand(std::string(TL_CTL_BIN) + " " + commands[i], 200, scratch); });
    if (i + 1 == commands.size()) break;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (requestsReceived(out, statusScratch) < before + int64_t(i) + 1 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace tl::testing
