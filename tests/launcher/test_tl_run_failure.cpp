// tl-run's reading of what a lost launch left: which ranks and hosts are lost, from the copies
// the survivors wrote (rank-R.json next to rank-R/checkpoint.tl), including copies that
// disagree (the two sides of a network partition name each other).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>
#include <vector>

#include "tools/run/supervisor.h"

namespace tl::run {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RecoveryDir {
 public:
  // hosts[r]: the host of rank r.
  explicit RecoveryDir(std::vector<std::string> hosts) : hosts_(std::move(hosts)) {
    dir_ = fs::temp_directory_path() / ("tl_run_failure_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "candidates");
  }
  ~RecoveryDir() { fs::remove_all(dir_); }

  // Rank r wrote its copy of step `step`, naming `missing`.
  void wrote(int r, int64_t step, const std::vector<int>& missing = {}, bool complete = true) {
    const fs::path copy = dir_ / "candidates" / ("rank-" + std::to_string(r));
    fs::create_directories(copy);
    std::ofstream(copy / "checkpoint.tl") << "x";
    json members = json::array();
    for (size_t i = 0; i < hosts_.size(); ++i) members.push_back({{"rank", i}, {"host", hosts_[i]}, {"pid", 0}});
    if (!complete) return;  // the info file is written last: without it the copy does not count
    std::ofstream(dir_ / "candidates" / ("rank-" + std::to_string(r) + ".json"))
        << json{{"rank", r}, {"step", step}, {"missing_ranks", missing}, {"members", members}}.dump();
  }
  FailureReport read() const { return readFailure(dir_.string(), int(hosts_.size())); }

 private:
  std::vector<std::string> hosts_;
  fs::path dir_;
};

TEST(TlRunFailure, ARankWithoutACopyIsLost) {
  RecoveryDir d({"a", "a", "b", "b"});
  d.wrote(0, 7);
  d.wrote(1, 7);
  d.wrote(3, 8);
  d.wrote(2, 9, {}, /*complete=*/false);
  const FailureReport r = d.read();
  EXPECT_EQ(r.lostRanks, (std::vector<int>{2}));
  EXPECT_TRUE(r.lostHosts.empty());
  EXPECT_EQ(r.survivors, 3);
  ASSERT_FALSE(r.candidates.empty());
  EXPECT_EQ(r.candidates.front().rank, 3) << "the newest complete copy first";
}

TEST(TlRunFailure, AHungRankNamedByEveryoneIsLost) {
  RecoveryDir d({"a", "a", "b"});
  d.wrote(0, 4, {2});
  d.wrote(1, 4, {2});
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

}  // namespace
}  // namespace tl::run
