// RecoveryGuard's watch of the members on other hosts (in place): heartbeats, the weighing of
// silent members, and the end of a process whose host takes itself for cut off, with its held
// copy. The rest of the guard: recovery_guard.cpp.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "control/control_key.h"
#include "elastic/recovery/member_heartbeat.h"
#include "elastic/recovery/recovery_guard.h"

namespace tl::elastic {
namespace {

// The exit status of a process whose host was cut off from the job (its copy is a held one:
// the job goes on on the other side, if that side lives).
constexpr int kExitCutOff = 76;
// How long such a process may take to write its held copy before it ends without one.
constexpr int kCutOffCopySeconds = 20;
// Members found silent within this of the first are weighed together (a host cut off).
constexpr double kSilenceSettleSeconds = 0.2;

double monotonicNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string ranksOf(const std::vector<Member>& members) {
  std::string s;
  for (const Member& m : members) s += (s.empty() ? "" : ",") + std::to_string(m.rank);
  return s;
}

// A process of this host that has ended (gone, a zombie, or dead).
}  // namespace

std::vector<elastic::Member> RecoveryGuard::pollHeartbeats(const std::vector<elastic::Member>& watched) {
  std::vector<elastic::Member> remote;
  for (const elastic::Member& m : watched)
    if (m.host != host_) remote.push_back(m);
  if (heartbeatFailed_ || (remote.empty() && !heartbeat_)) return {};
  const double now = monotonicNow();
  if (!heartbeat_) {
    try {
      heartbeat_ = std::make_unique<heartbeat::MemberHeartbeat>(control::createOrReuseKey(config_.outputDir),
                                                                paths_.dir, host_, int64_t(::getpid()));
    } catch (const std::exception& e) {
      heartbeatFailed_ = true;
      spdlog::warn("no heartbeats with the members on other hosts ({}): their loss is found by the collective "
                   "timeout only",
                   e.what());
      return {};
    }
  }
  std::vector<heartbeat::LostPeer> found;
  try {
    if (remote != heartbeatPeers_) {
      heartbeat_->setPeers(remote, now);
      heartbeatPeers_ = remote;
    }
    found = heartbeat_->poll(now);
  } catch (const std::exception& e) {  // no socket left (descriptors exhausted): not this thread's end
    heartbeatFailed_ = true;
    heartbeat_.reset();
    spdlog::warn("heartbeats stopped ({}): the loss of members on other hosts is found by the collective timeout only",
                 e.what());
    return {};
  }
  std::vector<elastic::Member> lost;
  for (const heartbeat::LostPeer& l : found) {
    if (!l.silent) {
      lost.push_back(l.member);  // its host says its process is gone
      continue;
    }
    if (silent_.empty()) silentSince_ = now;
    silent_.push_back(l.member);
  }
  if (silent_.empty() || now - silentSince_ < kSilenceSettleSeconds) return lost;
  // A partition looks the same from both sides: the side that keeps more than half of the
  // members not known dead (half, with the lead) goes on; the other ends.
  size_t dead = 0;
  {
    std::lock_guard<std::mutex> lock(watchMutex_);
    dead = gone_.size();
  }
  for (const elastic::Member& m : lost) dead += std::find(silent_.begin(), silent_.end(), m) == silent_.end();
  const size_t counted = watched.size() > dead ? watched.size() - dead : 0;
  const size_t heard = counted > silent_.size() ? counted - silent_.size() : 0;
  const bool leadSilent =
      std::any_of(silent_.begin(), silent_.end(), [](const elastic::Member& m) { return m.rank == 0; });
  if (2 * heard < counted || (2 * heard == counted && leadSilent)) {
    char why[512];
    std::snprintf(why, sizeof why,
                  "nothing heard for %.1f s from rank(s) %s on other hosts, which leaves this side "
                  "%zu of %zu "
                  "members%s",
                  heartbeat::deadlineSeconds(), ranksOf(silent_).c_str(), heard, counted,
                  leadSilent ? " without the lead" : "");
    endCutOff(why, silent_);
  }
  spdlog::warn("nothing heard for {:.1f} s from rank(s) {} on other hosts: counted lost", heartbeat::deadlineSeconds(),
               ranksOf(silent_));
  lost.insert(lost.end(), silent_.begin(), silent_.end());
  silent_.clear();
  return lost;
}

void RecoveryGuard::endCutOff(const std::string& why, const std::vector<elastic::Member>& silent) {
  std::fprintf(stderr,
               "tl-launch: rank %d (%s): %s: this host is cut off from the job, which goes on "
               "there; leaving a held "
               "copy (used only if that side ends too) and ending\n",
               rank_.load(), host_.c_str(), why.c_str());
  std::fflush(stderr);
  spdlog::default_logger()->flush();
  std::vector<int> missing;
  for (const elastic::Member& m : silent) missing.push_back(m.rank);
  // On a real cluster a host cut off may have lost the shared folder too: the copy gets a
  // bounded time, then this process ends all the same (the writer thread dies with it).
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread([this, done, missing, why] {
    writeCandidate(paths_.held(), {"this host was cut off from the job: " + why, false, missing});
    done->store(true);
  }).detach();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kCutOffCopySeconds);
  while (!done->load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!done->load())
    std::fprintf(
        stderr,
        "tl-launch: rank %d (%s): the held copy was not written within %d s; ending without it\n",
        rank_.load(), host_.c_str(), kCutOffCopySeconds);
  std::fflush(stderr);
  ::_exit(kExitCutOff);
}

}  // namespace tl::elastic
