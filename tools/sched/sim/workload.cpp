#include "tools/sched/sim/workload.h"

#include <cstdlib>
#include <set>
#include <sstream>

#include "common/check.h"

namespace tl::sched {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, sep)) out.push_back(item);
  if (!text.empty() && text.back() == sep) out.push_back("");
  return out;
}

double number(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  TL_REQUIRE(!text.empty() && end && *end == '\0', what, ": expected a number, got '", text, "'");
  return v;
}

}  // namespace

int ClusterSpec::totalGpus() const {
  int n = 0;
  for (const auto& k : kinds) n += k.count;
  return n;
}

int ClusterSpec::kindIndex(const std::string& name) const {
  for (size_t i = 0; i < kinds.size(); ++i)
    if (kinds[i].name == name) return int(i);
  return -1;
}

int ClusterSpec::queueIndex(const std::string& name) const {
  for (size_t i = 0; i < queues.size(); ++i)
    if (queues[i].name == name) return int(i);
  return -1;
}

std::vector<GpuKind> parseKinds(const std::string& text, const std::string& what) {
  std::vector<GpuKind> kinds;
  std::set<std::string> seen;
  for (const auto& item : split(text, ',')) {
    const auto parts = split(item, ':');
    TL_REQUIRE(parts.size() == 2 && !parts[0].empty(), what, ": '", item,
               "' is not KIND:COUNT (e.g. fast:32)");
    const double count = number(parts[1], what + " " + parts[0]);
    TL_REQUIRE(count >= 1 && count <= 1e6 && count == int(count), what, " ", parts[0],
               ": the count must be a whole number between 1 and 1000000, got ", parts[1]);
    TL_REQUIRE(seen.insert(parts[0]).second, what, ": kind ", parts[0], " is given twice");
    kinds.push_back({parts[0], int(count)});
  }
  TL_REQUIRE(!kinds.empty(), what, ": no GPU kinds given");
  return kinds;
}

std::vector<QueueSpec> parseQueues(const std::string& text, const std::string& what) {
  std::vector<QueueSpec> queues;
  std::set<std::string> seen;
  double sum = 0;
  for (const auto& item : split(text, ',')) {
    const auto parts = split(item, ':');
    TL_REQUIRE(parts.size() == 3 && !parts[0].empty(), what, ": '", item,
               "' is not NAME:GUARANTEED:MAX (e.g. research:0.5:1)");
    QueueSpec q{parts[0], number(parts[1], what + " " + parts[0]),
                number(parts[2], what + " " + parts[0])};
    TL_REQUIRE(q.guaranteed > 0 && q.guaranteed <= 1 && q.maxShare >= q.guaranteed &&
                   q.maxShare <= 1,
               what, " ", q.name, ": need 0 < guaranteed <= max <= 1, got ", parts[1], " and ",
               parts[2]);
    TL_REQUIRE(seen.insert(q.name).second, what, ": queue ", q.name, " is given twice");
    sum += q.guaranteed;
    queues.push_back(q);
  }
  TL_REQUIRE(!queues.empty(), what, ": no queues given");
  TL_REQUIRE(sum <= 1 + 1e-9, what, ": the guaranteed shares add up to ", sum, " (> 1)");
  return queues;
}

}  // namespace tl::sched
