#include "tools/sched/real/slots.h"

#include <cmath>
#include <set>
#include <sstream>

#include "common/check.h"
#include "common/cli/cli.h"

namespace tl::sched {

std::vector<SlotKind> parseSlotKinds(const std::string& text, const std::string& what) {
  std::vector<SlotKind> kinds;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::vector<std::string> parts;
    std::istringstream fields(item);
    for (std::string f; std::getline(fields, f, ':');) parts.push_back(f);
    TL_REQUIRE((parts.size() == 2 || parts.size() == 3) && !parts[0].empty(), what, ": '", item,
               "' is not NAME:COUNT[:SLOWDOWN] (e.g. slow:2:2)");
    SlotKind k;
    k.name = parts[0];
    const int64_t count = cli::parseInt(parts[1], what + " " + k.name);
    TL_REQUIRE(count >= 1 && count <= 4096, what, " ", k.name,
               ": the count must be between 1 and 4096, got ", parts[1]);
    k.count = int(count);
    if (parts.size() == 3) {
      k.slowdown = cli::parseDouble(parts[2], what + " " + k.name);
      TL_REQUIRE(std::isfinite(k.slowdown) && k.slowdown >= 1 && k.slowdown <= 1000, what, " ",
                 k.name, ": the slowdown must be between 1 and 1000, got ", parts[2]);
    }
    TL_REQUIRE(seen.insert(k.name).second, what, ": kind ", k.name, " is given twice");
    kinds.push_back(k);
  }
  TL_REQUIRE(!kinds.empty() && (text.empty() || text.back() != ','), what,
             ": expected NAME:COUNT[:SLOWDOWN],..., got '", text, "'");
  return kinds;
}

SlotTable::SlotTable(std::vector<SlotKind> kinds) : kinds_(std::move(kinds)) {
  for (size_t k = 0; k < kinds_.size(); ++k)
    for (int i = 0; i < kinds_[k].count; ++i) kindOfSlot_.push_back(int(k));
  owner_.assign(kindOfSlot_.size(), "");
}

ClusterSpec SlotTable::cluster() const {
  ClusterSpec c;
  for (const auto& k : kinds_) c.kinds.push_back({k.name, k.count});
  return c;
}

int SlotTable::kindOf(int slot) const {
  TL_CHECK(slot >= 0 && slot < size(), "no slot ", slot);
  return kindOfSlot_[size_t(slot)];
}

const std::string& SlotTable::owner(int slot) const {
  TL_CHECK(slot >= 0 && slot < size(), "no slot ", slot);
  return owner_[size_t(slot)];
}

int SlotTable::freeOf(int kind) const {
  int n = 0;
  for (size_t s = 0; s < owner_.size(); ++s) n += kindOfSlot_[s] == kind && owner_[s].empty();
  return n;
}

std::vector<int> SlotTable::take(int kind, int n, const std::string& job) {
  TL_CHECK(!job.empty());
  TL_CHECK(freeOf(kind) >= n, "job ", job, " asks for ", n, " slot(s) of kind ", kind, " but ",
           freeOf(kind), " are free");
  std::vector<int> out;
  for (size_t s = 0; s < owner_.size() && int(out.size()) < n; ++s)
    if (kindOfSlot_[s] == kind && owner_[s].empty()) {
      owner_[s] = job;
      out.push_back(int(s));
    }
  return out;
}

void SlotTable::release(int slot, const std::string& job) {
  TL_CHECK(owner(slot) == job, "job ", job, " gives back slot ", slot, " held by '", owner(slot), "'");
  owner_[size_t(slot)].clear();
}

}  // namespace tl::sched
