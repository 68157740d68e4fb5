// Reading a host list flag ("nodeA:2,nodeB:1") into tl::HostSlots (common/host_slots.h).
#pragma once

#include <string>
#include <vector>

#include "common/host_slots.h"

namespace tl::cli {

struct HostListRules {
  bool countRequired = false;  // HOST:N always (otherwise HOST alone means HOST:1)
  int maxCount = 1 << 20;
};

// InputError naming `flag` and the item at fault: an empty item, a name that is not a host
// name (validHostName), a count that is not a whole number in 1..maxCount.
std::vector<HostSlots> parseHostList(const std::string& text, const std::string& flag, HostListRules rules = {});

}  // namespace tl::cli
