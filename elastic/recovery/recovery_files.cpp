#include "elastic/recovery/recovery_files.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "common/check.h"
#include "common/files.h"

namespace tl::elastic {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

template <typename T>
void putIf(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <typename T>
std::optional<T> optionalOf(const json& j, const char* key) {
  if (!j.contains(key)) return std::nullopt;
  return j.at(key).get<T>();
}

}  // namespace

json toJson(const CandidateInfo& info) {
  json members = json::array();
  for (const Member& m : info.members) members.push_back({{"rank", m.rank}, {"pid", m.pid}, {"host", m.host}});
  return {{"rank", info.rank},
          {"host", info.host},
          {"pid", info.pid},
          {"step", info.step},
          {"completed_step", info.completedStep},
          {"reason", info.reason},
          {"timed_out", info.timedOut},
          {"missing_ranks", info.missingRanks},
          {"members", members},
          {"snapshot_at", info.snapshotAt},
          {"detected_at", info.detectedAt},
          {"written_at", info.writtenAt}};
}

CandidateInfo candidateInfoFromJson(const json& j) {
  CandidateInfo c;
  c.rank = j.at("rank").get<int>();
  c.host = j.value("host", "");
  c.pid = j.value("pid", int64_t(0));
  c.step = j.value("step", int64_t(-1));
  c.completedStep = j.value("completed_step", int64_t(0));
  c.reason = j.value("reason", "");
  // Copies written before "timed_out" existed said so only in the reason.
  c.timedOut = j.value("timed_out", c.reason.find("timed out") != std::string::npos);
  c.missingRanks = j.value("missing_ranks", std::vector<int>{});
  for (const json& m : j.value("members", json::array()))
    c.members.push_back({m.value("rank", -1), m.value("host", ""), m.value("pid", int64_t(0))});
  c.snapshotAt = j.value("snapshot_at", 0.0);
  c.detectedAt = j.value("detected_at", 0.0);
  c.writtenAt = j.value("written_at", 0.0);
  return c;
}

void writeCandidateInfo(const RecoveryPaths& paths, const CandidateInfo& info) {
  writeFileAtomic(paths.candidateInfo(info.rank), toJson(info).dump() + "\n");
}

json toJson(const FailureRecord& f) {
  json j{{"lost_ranks", f.lostRanks},         {"detected_by", f.detectedBy},
         {"reason", f.reason},                {"boundary_step", f.boundaryStep},
         {"steps_recomputed", f.stepsRecomputed}, {"processes_before", f.processesBefore}};
  putIf(j, "lost_hosts", f.lostHosts);
  putIf(j, "processes_after", f.processesAfter);
  putIf(j, "failed_at", f.failedAt);
  putIf(j, "detection_s", f.detectionSeconds);
  putIf(j, "copies", f.copies);
  putIf(j, "relaunched_at", f.relaunchedAt);
  j["mode"] = f.mode;
  putIf(j, "agreement_s", f.agreementSeconds);
  putIf(j, "resumed_at", f.resumedAt);
  return j;
}

FailureRecord failureFromJson(const json& j) {
  FailureRecord f;
  f.lostRanks = j.value("lost_ranks", std::vector<int>{});
  f.lostHosts = optionalOf<std::vector<std::string>>(j, "lost_hosts");
  f.detectedBy = j.value("detected_by", "");
  f.reason = j.value("reason", "");
  f.boundaryStep = j.value("boundary_step", int64_t(0));
  f.stepsRecomputed = j.value("steps_recomputed", int64_t(0));
  f.processesBefore = j.value("processes_before", 0);
  f.processesAfter = optionalOf<int>(j, "processes_after");
  f.failedAt = optionalOf<double>(j, "failed_at");
  f.detectionSeconds = optionalOf<double>(j, "detection_s");
  f.copies = optionalOf<size_t>(j, "copies");
  f.relaunchedAt = optionalOf<double>(j, "relaunched_at");
  f.mode = j.value("mode", std::string("restart"));
  f.agreementSeconds = optionalOf<double>(j, "agreement_s");
  f.resumedAt = optionalOf<double>(j, "resumed_at");
  return f;
}

json toJson(const RecoveryHistory& h) {
  json failures = json::array();
  for (const FailureRecord& f : h.failures) failures.push_back(toJson(f));
  return {{"failures", failures}};
}

void writeHistory(const RecoveryPaths& paths, const RecoveryHistory& h) {
  writeFileAtomic(paths.history(), toJson(h).dump(1) + "\n");
}

RecoveryHistory readHistory(const RecoveryPaths& paths) {
  RecoveryHistory h;
  if (!fileExists(paths.history())) return h;
  try {
    const json j = json::parse(readFile(paths.history()));
    for (const json& f : j.value("failures", json::array())) h.failures.push_back(failureFromJson(f));
  } catch (const json::exception& e) {
    inputError("recovery history '", paths.history(), "' is malformed: ", e.what());
  }
  return h;
}

std::vector<Member> FailureReport::members() const {
  for (const Candidate& c : candidates)
    if (!c.info.members.empty()) return c.info.members;
  return {};
}

namespace {

// Copies may disagree on who is missing: across a network partition each side names the other.
// The view trusted is the one the most writers share (writers it does not name), ties to the
// lowest-ranked writer's, the lead's side.
std::set<int> trustedMissing(const std::vector<Candidate>& candidates, const std::set<int>& wrote) {
  std::set<int> trusted;
  size_t support = 0;
  for (int w : wrote) {  // ascending ranks
    const auto& c = *std::find_if(candidates.begin(), candidates.end(), [&](const Candidate& x) { return x.rank() == w; });
    const std::set<int> view(c.info.missingRanks.begin(), c.info.missingRanks.end());
    const size_t n = size_t(std::count_if(wrote.begin(), wrote.end(), [&](int r) { return !view.count(r); }));
    if (n > support) {
      support = n;
      trusted = view;
    }
  }
  return trusted;
}

std::vector<Candidate> readCandidates(const RecoveryPaths& paths) {
  std::vector<Candidate> out;
  if (!fs::exists(paths.candidates())) return out;
  for (const auto& entry : fs::directory_iterator(paths.candidates())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || entry.path().extension() != ".json") continue;
    Candidate c;
    try {
      c.info = candidateInfoFromJson(json::parse(readFile(entry.path().string())));
    } catch (const std::exception&) {
      continue;  // damaged, or not (yet) a complete copy
    }
    c.dir = paths.candidateDir(c.rank());
    if (!fileExists(paths.candidateCheckpoint(c.rank()))) continue;
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.step() != b.step() ? a.step() > b.step() : a.rank() < b.rank();
  });
  return out;
}

}  // namespace

FailureReport readFailure(const RecoveryPaths& paths, int processes) {
  FailureReport report;
  report.candidates = readCandidates(paths);
  std::set<int> missing, wrote;
  for (const Candidate& c : report.candidates) {
    missing.insert(c.info.missingRanks.begin(), c.info.missingRanks.end());
    wrote.insert(c.rank());
    report.wrote.push_back(c.rank());
  }
  report.namedMissing.assign(missing.begin(), missing.end());
  const std::set<int> trusted = trustedMissing(report.candidates, wrote);
  // An in-place rescale may have changed the job's size since its launch.
  const std::vector<Member> table = report.members();
  if (!table.empty()) processes = int(table.size());
  if (!wrote.empty()) processes = std::max(processes, *wrote.rbegin() + 1);
  if (!missing.empty()) processes = std::max(processes, *missing.rbegin() + 1);
  report.processes = processes;
  for (int r = 0; r < processes; ++r) {
    report.accountedFor += wrote.count(r) || missing.count(r);
    if (wrote.count(r) && !trusted.count(r)) ++report.survivors;
    else report.lostRanks.push_back(r);
  }
  std::map<std::string, int> alive;
  for (const Member& m : report.members())
    alive[m.host] += std::find(report.lostRanks.begin(), report.lostRanks.end(), m.rank) == report.lostRanks.end();
  for (const auto& [host, n] : alive)
    if (n == 0) report.lostHosts.push_back(host);
  return report;
}

}  // namespace tl::elastic
