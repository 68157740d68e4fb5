// The two clocks tl reads: Unix seconds for records other programs compare (metrics, recovery
// files), and steady seconds for measuring how long something took here.
#pragma once

#include <chrono>

namespace tl {

// Seconds since the Unix epoch (the system clock: comparable across processes and hosts).
inline double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Seconds from `start` to now on the steady clock.
inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace tl
