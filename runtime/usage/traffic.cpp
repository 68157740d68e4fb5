#include "runtime/usage/traffic.h"

#include <chrono>

namespace tl::usage {

TrafficBytes allreduceBytes(int64_t bytes, int members) {
  if (members <= 1) return {};
  const int64_t moved = 2 * (members - 1) * bytes / members;
  return {moved, moved};
}

TrafficBytes broadcastBytes(int64_t bytes, int members, bool root) {
  if (members <= 1) return {};
  return root ? TrafficBytes{bytes, 0} : TrafficBytes{0, bytes};
}

TrafficBytes allgatherBytes(int64_t bytesPerMember, int members) {
  if (members <= 1) return {};
  return {(members - 1) * bytesPerMember, (members - 1) * bytesPerMember};
}

TrafficBytes halfRingBytes(int64_t bytes, int members) {
  if (members <= 1) return {};
  const int64_t moved = (members - 1) * bytes / members;
  return {moved, moved};
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void TrafficLog::add(const TrafficEvent& e, double callCpuSeconds) {
  events_.push_back(e);
  sent_ += e.sent;
  received_ += e.received;
  callCpuNs_.fetch_add(int64_t(callCpuSeconds * 1e9), std::memory_order_relaxed);
}

std::vector<TrafficEvent> TrafficLog::take() {
  std::vector<TrafficEvent> out;
  out.swap(events_);
  return out;
}

}  // namespace tl::usage
