// The state of a process of this host, read from /proc (Linux): for watchers that must tell a
// stopped process (a hang) from a running one and from one that has ended.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace tl {

// The state letter of /proc/PID/stat (R running, S sleeping, T stopped, Z zombie, ...); 0 when
// the process is gone.
inline char processState(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : 0;
}

}  // namespace tl
