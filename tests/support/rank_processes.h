// The ranks of a running tl-launch job seen from outside: its metrics.jsonl records and the
// tl-launch processes writing to its output folder, for tests that signal ranks (SIGKILL,
// SIGSTOP). Header-only; the including test is an e2e test with TOOLS tl-launch (TL_LAUNCH_BIN).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/run_command.h"

namespace tl::testing {

// The records of `type` in the job's metrics.jsonl, in order.
inline std::vector<nlohmann::json> records(const std::string& out, const std::string& type) {
  std::vector<nlohmann::json> found;
  std::ifstream in(out + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"" + type + "\"") == std::string::npos) continue;
    found.push_back(nlohmann::json::parse(line));
  }
  return found;
}

// The last step the job's metrics.jsonl records, -1 before the first.
inline int64_t lastStep(const std::string& out) {
  int64_t last = -1;
  for (const nlohmann::json& r : records(out, "step")) last = std::max(last, r.value("step", int64_t(-1)));
  return last;
}

// The tl-launch processes of the job writing to `out` (mpirun's children, not mpirun).
inline std::vector<pid_t> rankProcesses(const std::string& out) {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = slurp(entry.path().string() + "/cmdline");
    const std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (argv0 == TL_LAUNCH_BIN && cmdline.find(out + " ") != std::string::npos) pids.push_back(pid_t(std::stoi(name)));
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

// Polls `done` every 20 ms until it holds (true) or `seconds` pass (false).
inline bool waitUntil(const std::function<bool()>& done, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace tl::testing
