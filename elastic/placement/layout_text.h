// Placements as tl shows and compares them: "2,1,1", and the ESTs per member.
#pragma once

#include <string>
#include <vector>

#include "est/placement.h"

namespace tl::elastic {

inline std::string joinInts(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

inline std::vector<int> countsOf(const est::Placement& p) {
  std::vector<int> c;
  for (int r = 0; r < p.processes(); ++r) c.push_back(p.count(r));
  return c;
}

}  // namespace tl::elastic
