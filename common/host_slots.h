// A host list as mpirun and tl take it: "nodeA:2,nodeB:1" (tl-run --hosts, tl-ctl rescale
// --hosts, the control protocol's rescale request, mpirun --host). Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tl {

struct HostSlots {
  std::string host;
  int count = 1;  // processes (slots) on it
  bool operator==(const HostSlots& o) const { return host == o.host && count == o.count; }
};

inline constexpr size_t kMaxHostNameBytes = 255;
// 1-255 characters of A-Z a-z 0-9 . - _ (what the control protocol carries).
bool validHostName(std::string_view name);

// "nodeA:2,nodeB:1".
std::string formatHostList(const std::vector<HostSlots>& hosts);

}  // namespace tl
