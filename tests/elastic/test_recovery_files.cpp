// The recovery files (elastic/recovery/recovery_files.h): what the recovery guard writes reads
// back the same, files in today's format (as earlier versions wrote them) still read, damaged
// ones are skipped or named; and tl-run's reading of what a lost launch left: which ranks and
// hosts are lost, including copies that disagree (the two sides of a network partition name
// each other).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/check.h"
#include "elastic/recovery/recovery_files.h"

namespace tl::elastic {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RecoveryDir {
 public:
  // hosts[r]: the host of rank r.
  explicit RecoveryDir(std::vector<std::string> hosts) : hosts_(std::move(hosts)) {
    dir_ = fs::temp_directory_path() / ("tl_recovery_files_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "candidates");
  }
  ~RecoveryDir() { fs::remove_all(dir_); }
  RecoveryPaths paths() const { return {dir_.string()}; }

  // Rank r wrote its copy of step `step`, naming `missing`, as today's guard writes it.
  void wrote(int r, int64_t step, const std::vector<int>& missing = {}, bool complete = true) {
    fs::create_directories(paths().candidateDir(r));
    std::ofstream(paths().candidateCheckpoint(r)) << "x";
    if (!complete) return;  // the info file is written last: without it the copy does not count
    CandidateInfo info;
    info.rank = r;
    info.step = step;
    info.missingRanks = missing;
    for (size_t i = 0; i < hosts_.size(); ++i) info.members.push_back({int(i), hosts_[i], 0});
    writeCandidateInfo(paths(), info);
  }
  // The same as an earlier tl-launch wrote it: the info's keys spelt by hand.
  void wroteByHand(int r, int64_t step, const std::vector<int>& missing = {}, bool complete = true) {
    const fs::path copy = dir_ / "candidates" / ("rank-" + std::to_string(r));
    fs::create_directories(copy);
    std::ofstream(copy / "checkpoint.tl") << "x";
    json members = json::array();
    for (size_t i = 0; i < hosts_.size(); ++i) members.push_back({{"rank", i}, {"host", hosts_[i]}, {"pid", 0}});
    if (!complete) return;  // the info file is written last: without it the copy does not count
    std::ofstream(dir_ / "candidates" / ("rank-" + std::to_string(r) + ".json"))
        << json{{"rank", r}, {"step", step}, {"missing_ranks", missing}, {"members", members}}.dump();
  }
  FailureReport read() const { return readFailure(paths(), int(hosts_.size())); }
  // As tl-run reads it after a launch of `launched` processes.
  FailureReport readAfterLaunchOf(int launched) const { return readFailure(paths(), launched); }

 private:
  std::vector<std::string> hosts_;
  fs::path dir_;
};

TEST(TlRunFailure, ARankWithoutACopyIsLost) {
  RecoveryDir d({"a", "a", "b", "b"});
  d.wrote(0, 7);
  d.wroteByHand(1, 7);
  d.wrote(3, 8);
  d.wroteByHand(2, 9, {}, /*complete=*/false);
  const FailureReport r = d.read();
  EXPECT_EQ(r.lostRanks, (std::vector<int>{2}));
  EXPECT_TRUE(r.lostHosts.empty());
  EXPECT_EQ(r.survivors, 3);
  ASSERT_FALSE(r.candidates.empty());
  EXPECT_EQ(r.candidates.front().rank(), 3) << "the newest complete copy first";
}

TEST(TlRunFailure, AHungRankNamedByEveryoneIsLost) {
  RecoveryDir d({"a", "a", "b"});
  d.wrote(0, 4, {2});
  d.wroteByHand(1, 4, {2});
  const FailureReport r = d.read();
  EXPECT_EQ(r.lostRanks, (std::vector<int>{2}));
  EXPECT_EQ(r.lostHosts, (std::vector<std::string>{"b"}));
  EXPECT_EQ(r.namedMissing, (std::vector<int>{2}));
}

TEST(TlRunFailure, AnEvenPartitionKeepsTheLeadsSide) {
  // Hosts a and b cut apart: each side wrote a copy naming the other.
  RecoveryDir d({"a", "a", "b", "b"});
  d.wrote(2, 10, {0, 1});
  d.wrote(3, 10, {0, 1});
  d.wrote(0, 10, {2, 3});
  d.wrote(1, 10, {2, 3});
  const FailureReport r = d.read();
  EXPECT_EQ(r.lostRanks, (std::vector<int>{2, 3}));
  EXPECT_EQ(r.lostHosts, (std::vector<std::string>{"b"}));
  EXPECT_EQ(r.survivors, 2);
}

TEST(TlRunFailure, APartitionKeepsTheLargerSide) {
  // Rank 0's host cut off from the three others: the three agree, rank 0 alone disagrees.
  RecoveryDir d({"a", "b", "c", "c"});
  d.wrote(0, 5, {1, 2, 3});
  d.wrote(1, 5, {0});
  d.wrote(2, 5, {0});
  d.wrote(3, 5, {0});
  const FailureReport r = d.read();
  EXPECT_EQ(r.lostRanks, (std::vector<int>{0}));
  EXPECT_EQ(r.lostHosts, (std::vector<std::string>{"a"}));
  EXPECT_EQ(r.survivors, 3);
}

// The copies' member table follows in-place rescales: a process a grow started that wrote no
// copy is lost, and ranks a shrink let go are not.
TEST(TlRunFailure, TheMemberTableFollowsInPlaceRescales) {
  {
    RecoveryDir grown({"a", "a", "a"});  // launched with 2, grown to 3
    grown.wrote(0, 8);
    grown.wrote(1, 8);
    const FailureReport r = grown.readAfterLaunchOf(2);
    EXPECT_EQ(r.processes, 3);
    EXPECT_EQ(r.lostRanks, (std::vector<int>{2}));
    EXPECT_EQ(r.survivors, 2);
  }
  {
    RecoveryDir shrunk({"a", "b"});  // launched with 3, shrunk to 2, then rank 1 lost
    shrunk.wrote(0, 8);
    const FailureReport r = shrunk.readAfterLaunchOf(3);
    EXPECT_EQ(r.processes, 2);
    EXPECT_EQ(r.lostRanks, (std::vector<int>{1}));
    EXPECT_EQ(r.lostHosts, (std::vector<std::string>{"b"}));
  }
}

TEST(RecoveryFiles, PathsKeepTheirNames) {
  const RecoveryPaths p{"/r"};
  EXPECT_EQ(p.candidates(), "/r/candidates");
  EXPECT_EQ(p.candidateDir(3), "/r/candidates/rank-3");
  EXPECT_EQ(p.candidateCheckpoint(3), "/r/candidates/rank-3/checkpoint.tl");
  EXPECT_EQ(p.candidateInfo(3), "/r/candidates/rank-3.json");
  EXPECT_EQ(p.history(), "/r/history.json");
  EXPECT_EQ(p.keptState(2), "/r/state-2");
}

TEST(RecoveryFiles, ACandidateReadsBackAsWritten) {
  RecoveryDir d({"a", "b"});
  CandidateInfo w;
  w.rank = 1;
  w.host = "b";
  w.pid = 4242;
  w.step = 12;
  w.completedStep = 13;
  w.reason = "mpi allreduce timed out after 2000 ms on rank 1";
  w.timedOut = true;
  w.missingRanks = {0};
  w.members = {{0, "a", 11}, {1, "b", 4242}};
  w.snapshotAt = 100.5;
  w.detectedAt = 101.25;
  w.writtenAt = 102.75;
  fs::create_directories(d.paths().candidateDir(1));
  std::ofstream(d.paths().candidateCheckpoint(1)) << "x";
  writeCandidateInfo(d.paths(), w);
  const FailureReport r = d.read();
  ASSERT_EQ(r.candidates.size(), 1u);
  const CandidateInfo& got = r.candidates[0].info;
  EXPECT_EQ(r.candidates[0].dir, d.paths().candidateDir(1));
  EXPECT_EQ(got.rank, 1);
  EXPECT_EQ(got.host, "b");
  EXPECT_EQ(got.pid, 4242);
  EXPECT_EQ(got.step, 12);
  EXPECT_EQ(got.completedStep, 13);
  EXPECT_EQ(got.reason, w.reason);
  EXPECT_TRUE(got.timedOut);
  EXPECT_EQ(got.missingRanks, (std::vector<int>{0}));
  EXPECT_EQ(got.members, w.members);
  EXPECT_EQ(got.snapshotAt, 100.5);
  EXPECT_EQ(got.detectedAt, 101.25);
  EXPECT_EQ(got.writtenAt, 102.75);
  EXPECT_EQ(r.members(), w.members);
  EXPECT_EQ(r.lostRanks, (std::vector<int>{0}));
  EXPECT_EQ(r.lostHosts, (std::vector<std::string>{"a"}));
}

TEST(RecoveryFiles, ACandidateInTodaysFormatReads) {
  // Exactly what tl-launch wrote before the contract had a home (no "timed_out": a timeout
  // shows only in the reason).
  RecoveryDir d({"a", "a", "b"});
  fs::create_directories(d.paths().candidateDir(2));
  std::ofstream(d.paths().candidateCheckpoint(2)) << "x";
  std::ofstream(d.paths().candidateInfo(2))
      << R"({"completed_step":9,"detected_at":50.5,"host":"b","members":[{"host":"a","pid":7,"rank":0},)"
      << R"({"host":"a","pid":8,"rank":1},{"host":"b","pid":9,"rank":2}],"missing_ranks":[1],"pid":9,"rank":2,)"
      << R"("reason":"mpi broadcast timed out after 1000 ms on rank 2 of a communicator of size 3: rank 1 (host a) )"
      << R"(did not join it within 1 s","snapshot_at":49.0,"step":9,"written_at":51.0})" << "\n";
  const FailureReport r = d.read();
  ASSERT_EQ(r.candidates.size(), 1u);
  const CandidateInfo& c = r.candidates[0].info;
  EXPECT_EQ(c.rank, 2);
  EXPECT_EQ(c.step, 9);
  EXPECT_EQ(c.completedStep, 9);
  EXPECT_TRUE(c.timedOut);
  EXPECT_EQ(c.missingRanks, (std::vector<int>{1}));
  EXPECT_EQ(c.members, (std::vector<Member>{{0, "a", 7}, {1, "a", 8}, {2, "b", 9}}));
  EXPECT_EQ(c.detectedAt, 50.5);
  EXPECT_EQ(r.namedMissing, (std::vector<int>{1}));
  EXPECT_EQ(r.lostRanks, (std::vector<int>{0, 1}));
  EXPECT_EQ(r.lostHosts, (std::vector<std::string>{"a"}));
}

TEST(RecoveryFiles, ADamagedCandidateIsNoCopy) {
  RecoveryDir d({"a", "a", "a"});
  d.wrote(0, 5);
  for (int r : {1, 2}) {
    fs::create_directories(d.paths().candidateDir(r));
    std::ofstream(d.paths().candidateCheckpoint(r)) << "x";
  }
  std::ofstream(d.paths().candidateInfo(1)) << R"({"rank":1,"step":)";       // cut short
  std::ofstream(d.paths().candidateInfo(2)) << R"({"rank":"two","step":6})";  // wrong type
  const FailureReport r = d.read();
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].rank(), 0);
  EXPECT_EQ(r.lostRanks, (std::vector<int>{1, 2}));
  // An info file without its checkpoint is not a copy either.
  fs::remove_all(d.paths().candidateDir(0));
  EXPECT_TRUE(d.read().candidates.empty());
}

FailureRecord lostRecord() {
  FailureRecord f;
  f.lostRanks = {3};
  f.lostHosts = std::vector<std::string>{"b"};
  f.detectedBy = "hang-timeout";
  f.reason = "mpi allreduce timed out";
  f.boundaryStep = 7;
  f.stepsRecomputed = 1;
  f.processesBefore = 4;
  f.processesAfter = 3;
  f.failedAt = 10.5;
  f.detectionSeconds = 2.25;
  f.copies = 3;
  f.relaunchedAt = 14.0;
  return f;
}

FailureRecord lostBeforeFirstStep() {
  FailureRecord f;
  f.detectedBy = "mpirun";
  f.reason = "lost before its first step";
  f.processesBefore = 2;
  f.processesAfter = 2;
  f.relaunchedAt = 3.0;
  return f;
}

std::set<std::string> keysOf(const json& j) {
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  return keys;
}

TEST(RecoveryFiles, FailureRecordsKeepTheirKeys) {
  EXPECT_EQ(keysOf(toJson(lostRecord())),
            (std::set<std::string>{"lost_ranks", "lost_hosts", "detected_by", "reason", "boundary_step",
                                   "steps_recomputed", "failed_at", "detection_s", "processes_before",
                                   "processes_after", "copies", "relaunched_at", "mode"}));
  EXPECT_EQ(keysOf(toJson(lostBeforeFirstStep())),
            (std::set<std::string>{"lost_ranks", "detected_by", "reason", "boundary_step", "steps_recomputed",
                                   "processes_before", "processes_after", "relaunched_at", "mode"}));
  EXPECT_EQ(toJson(lostRecord())["mode"], "restart");
  // An in-place recovery's record (kept in memory, reported in the job's metrics).
  FailureRecord inPlace = lostRecord();
  inPlace.mode = "in-place";
  inPlace.agreementSeconds = 0.01;
  inPlace.resumedAt = 100.5;
  const nlohmann::json j = toJson(inPlace);
  EXPECT_EQ(j["mode"], "in-place");
  EXPECT_EQ(j["agreement_s"], 0.01);
  const FailureRecord back = failureFromJson(j);
  EXPECT_EQ(back.mode, "in-place");
  EXPECT_EQ(back.resumedAt, std::optional<double>(100.5));
  EXPECT_EQ(failureFromJson(nlohmann::json::parse(R"({"lost_ranks": [1]})")).mode, "restart")
      << "records written before the mode existed are restarts";
}

TEST(RecoveryFiles, AHistoryReadsBackAsWritten) {
  RecoveryDir d({"a"});
  EXPECT_TRUE(readHistory(d.paths()).failures.empty()) << "no history.json: no failures";
  RecoveryHistory h;
  h.failures = {lostBeforeFirstStep(), lostRecord()};
  writeHistory(d.paths(), h);
  const RecoveryHistory got = readHistory(d.paths());
  ASSERT_EQ(got.failures.size(), 2u);
  EXPECT_EQ(toJson(got), toJson(h));
  const FailureRecord& f = got.failures[1];
  EXPECT_EQ(f.lostRanks, (std::vector<int>{3}));
  EXPECT_EQ(f.lostHosts, std::optional<std::vector<std::string>>(std::vector<std::string>{"b"}));
  EXPECT_EQ(f.boundaryStep, 7);
  EXPECT_EQ(f.processesAfter, std::optional<int>(3));
  EXPECT_EQ(f.copies, std::optional<size_t>(3));
  EXPECT_FALSE(got.failures[0].lostHosts.has_value());
  EXPECT_FALSE(got.failures[0].failedAt.has_value());
}

TEST(RecoveryFiles, AHistoryInTodaysFormatReads) {
  RecoveryDir d({"a"});
  std::ofstream(d.paths().history())
      << R"({"failures": [{"boundary_step": 4, "copies": 2, "detected_by": "mpirun", "detection_s": 0.5,)"
      << R"( "failed_at": 20.0, "lost_hosts": [], "lost_ranks": [2], "processes_after": 2,)"
      << R"( "processes_before": 3, "reason": "ended by mpirun", "relaunched_at": 22.0, "steps_recomputed": 0}]})";
  const RecoveryHistory h = readHistory(d.paths());
  ASSERT_EQ(h.failures.size(), 1u);
  EXPECT_EQ(h.failures[0].lostRanks, (std::vector<int>{2}));
  EXPECT_EQ(h.failures[0].boundaryStep, 4);
  EXPECT_EQ(h.failures[0].processesAfter, std::optional<int>(2));
  EXPECT_EQ(h.failures[0].failedAt, std::optional<double>(20.0));
  EXPECT_EQ(h.failures[0].lostHosts, std::optional<std::vector<std::string>>(std::vector<std::string>{}));
}

TEST(RecoveryFiles, ADamagedHistoryIsNamed) {
  RecoveryDir d({"a"});
  std::ofstream(d.paths().history()) << R"({"failures": [{"boundary_step": )";
  try {
    readHistory(d.paths());
    FAIL() << "a damaged history must not read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("recovery history '" + d.paths().history() + "' is malformed"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(d.paths().history()) << R"({"failures": [{"boundary_step": "seven"}]})";
  EXPECT_THROW(readHistory(d.paths()), InputError);
}

}  // namespace
}  // namespace tl::elastic
