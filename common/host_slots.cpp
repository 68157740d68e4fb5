#include "common/host_slots.h"

namespace tl {

bool validHostName(std::string_view name) {
  if (name.empty() || name.size() > kMaxHostNameBytes) return false;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string formatHostList(const std::vector<HostSlots>& hosts) {
  std::string s;
  for (const HostSlots& h : hosts) s += (s.empty() ? "" : ",") + h.host + ":" + std::to_string(h.count);
  return s;
}

}  // namespace tl
