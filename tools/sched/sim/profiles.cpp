#include "tools/sched/sim/profiles.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>

#include "common/check.h"
#include "elastic/placement/placement_planner.h"
#include "tools/submit/csv.h"

namespace tl::sched {

extern const char* const kDefaultProfilesCsv;

namespace {

double parseNumber(const std::string& text, const std::string& where, const char* column) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  TL_REQUIRE(!text.empty() && end && *end == '\0' && std::isfinite(v), where, ": ", column,
             ": expected a number, got '", text, "'");
  return v;
}

}  // namespace

ProfileSet ProfileSet::parse(const std::string& text, const std::string& source) {
  const auto records = submit::parseCsv(text, source);
  TL_REQUIRE(!records.empty(), source, ": no header (model,kind,gpus,samples_per_s)");
  const std::vector<std::string> header{"model", "kind", "gpus", "samples_per_s"};
  TL_REQUIRE(records[0].fields == header, source, ":", records[0].line,
             ": the header must be model,kind,gpus,samples_per_s");
  ProfileSet set;
  for (size_t i = 1; i < records.size(); ++i) {
    const auto& r = records[i];
    const std::string where = source + ":" + std::to_string(r.line);
    TL_REQUIRE(r.fields.size() == 4, where, ": expected 4 fields, got ", r.fields.size());
    TL_REQUIRE(!r.fields[0].empty() && !r.fields[1].empty(), where, ": model and kind must not be empty");
    const double gpus = parseNumber(r.fields[2], where, "gpus");
    TL_REQUIRE(gpus >= 1 && gpus == std::floor(gpus) && gpus <= 1e6, where,
               ": gpus must be a whole number >= 1, got ", r.fields[2]);
    const double rate = parseNumber(r.fields[3], where, "samples_per_s");
    TL_REQUIRE(rate > 0, where, ": samples_per_s must be > 0, got ", r.fields[3]);
    auto& points = set.points_[{r.fields[0], r.fields[1]}];
    TL_REQUIRE(points.emplace(int(gpus), rate).second, where, ": ", r.fields[0], " on ",
               int(gpus), " ", r.fields[1], " GPU(s) is given twice");
  }
  TL_REQUIRE(!set.points_.empty(), source, ": no profile rows");
  return set;
}

ProfileSet ProfileSet::builtin() { return parse(kDefaultProfilesCsv, "built-in profiles"); }

bool ProfileSet::has(const std::string& model, const std::string& kind) const {
  return points_.count({model, kind}) > 0;
}

double ProfileSet::rate(const std::string& model, const std::string& kind, int n) const {
  auto it = points_.find({model, kind});
  TL_REQUIRE(it != points_.end(), "no profile for model ", model, " on GPU kind ", kind);
  TL_CHECK_GE(n, 1);
  const auto& pts = it->second;
  auto hi = pts.lower_bound(n);
  if (hi != pts.end() && hi->first == n) return hi->second;
  if (hi == pts.begin()) return hi->second * n / hi->first;
  if (hi == pts.end()) {
    const auto& last = *pts.rbegin();
    return last.second * n / last.first;
  }
  auto lo = std::prev(hi);
  const double f = double(n - lo->first) / double(hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

std::vector<std::string> ProfileSet::models() const {
  std::vector<std::string> out;
  for (const auto& [key, pts] : points_)
    if (out.empty() || out.back() != key.first) out.push_back(key.first);
  return out;
}

void ProfileSet::requireCovers(const ClusterSpec& cluster, const std::vector<JobSpec>& jobs) const {
  std::set<std::string> checked;
  for (const auto& job : jobs) {
    if (!checked.insert(job.model).second) continue;
    for (const auto& kind : cluster.kinds)
      TL_REQUIRE(has(job.model, kind.name), "job ", job.id, ": no profile for model ", job.model,
                 " on GPU kind ", kind.name, " (add rows to the profile file)");
  }
}

size_t ThroughputModel::KeyHash::operator()(const std::vector<int>& key) const {
  size_t h = 1469598103934665603ull;
  for (int v : key) h = (h ^ size_t(uint32_t(v))) * 1099511628211ull;
  return h;
}

ThroughputModel::ThroughputModel(const ClusterSpec& cluster, const ProfileSet& profiles)
    : cluster_(cluster), profiles_(profiles) {
  for (const auto& m : profiles_.models()) modelIds_.emplace(m, int(modelIds_.size()));
}

const std::vector<int>& ThroughputModel::kindsBySpeed(const std::string& model) const {
  auto it = kindOrder_.find(model);
  if (it != kindOrder_.end()) return it->second;
  std::vector<int> order(cluster_.kinds.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return profiles_.rate(model, cluster_.kinds[a].name, 1) >
           profiles_.rate(model, cluster_.kinds[b].name, 1);
  });
  return kindOrder_.emplace(model, order).first->second;
}

double ThroughputModel::rate(const JobSpec& job, const std::vector<int>& gpusPerKind) const {
  TL_CHECK_EQ(gpusPerKind.size(), cluster_.kinds.size());
  int total = 0;
  for (int n : gpusPerKind) total += n;
  if (total == 0) return 0;
  const int ests = job.logicalWorkers();
  auto modelIt = modelIds_.find(job.model);
  TL_REQUIRE(modelIt != modelIds_.end(), "job ", job.id, ": no profile for model ", job.model);
  // Up to 4 kinds with counts, ESTs and model ids below 2^16 (every preset and test): the key
  // packed into two words, no allocation per look-up (policies ask millions of times).
  bool packable = gpusPerKind.size() <= 4 && ests < 65536 && modelIt->second < 65536;
  for (int n : gpusPerKind) packable = packable && n >= 0 && n < 65536;
  PackedKey packed{uint64_t(modelIt->second) << 48 | uint64_t(ests) << 32, 0};
  if (packable) {
    for (size_t k = 0; k < gpusPerKind.size(); ++k) {
      const uint64_t v = uint64_t(gpusPerKind[k]);
      if (k < 2) packed.hi |= v << (16 * (1 - k));
      else packed.lo |= v << (16 * (5 - k));
    }
    auto hit = packedCache_.find(packed);
    if (hit != packedCache_.end()) return hit->second;
  }
  std::vector<int> key{modelIt->second, ests};
  key.insert(key.end(), gpusPerKind.begin(), gpusPerKind.end());
  if (!packable) {
    auto cached = cache_.find(key);
    if (cached != cache_.end()) return cached->second;
  }

  // One process per device with an EST's seconds per sample on it; the planner's exact rule.
  std::vector<elastic::ProcessSpeed> devices;
  for (size_t k = 0; k < gpusPerKind.size(); ++k) {
    if (gpusPerKind[k] == 0) continue;
    const double perDevice = profiles_.rate(job.model, cluster_.kinds[k].name, total) / total;
    for (int i = 0; i < std::min(gpusPerKind[k], ests); ++i)
      devices.push_back({1.0 / perDevice, 0, 0});
  }
  const auto plan = elastic::planPlacement(devices, ests, /*minimumPerProcess=*/0);
  const double samplesPerSecond = ests / plan.stepSeconds;
  if (packable) packedCache_.emplace(packed, samplesPerSecond);
  else cache_.emplace(std::move(key), samplesPerSecond);
  return samplesPerSecond;
}

}  // namespace tl::sched
