// End-to-end: a running tl-launch job rescaled in place with tl-ctl (shrink, grow, placement
// change, checkpoint, stop, resume), under real mpirun, against the DDP run's params_sha256;
// bad requests, a grow that cannot start, a wrong key and a flood of connections while it trains.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/background_job.h"
#include "tests/support/consistency_csv.h"
#include "tests/support/run_command.h"

namespace {

using nlohmann::json;
using tl::testing::BackgroundJob;
using tl::testing::CommandResult;
using tl::testing::queueCommands;
using tl::testing::rescaleEvents;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

// N = 4 logical workers; 256 training images of batch 8: 8 steps per epoch. BatchNorm and
// dropout, so the ESTs' generators and rank 0's buffers have to move right.
constexpr int kSteps = 500;
constexpr int kStepsPerEpoch = 8;
std::string gDataDir;
std::string gReferenceSha;

std::string jobFlags() {
  return std::string(" --model cnn --dropout 0.3 --dataset cifar10 --data-dir ") + gDataDir +
         " --batch 8 --steps " + std::to_string(kSteps) + " --seed 11 --logical-workers 4 --log-every 0";
}

std::string ctl() { return std::string(TL_CTL_BIN) + " "; }

json summary(const std::string& out) { return json::parse(slurp(out + "/summary.json")); }

class InplaceRescale : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    gDataDir = tl::testing::makeSyntheticCifar("rescale_data", 256, 64, 4, &error);
    ASSERT_TRUE(error.empty()) << error;
    // DDP mode: 4 processes, one logical worker each, no control channel.
    const std::string dir = freshDir("rescale_reference");
    auto r = runCommand(tl::testing::mpirunPrefix(4) + TL_LAUNCH_BIN + jobFlags() + " --output-dir " + dir +
                            "/out --control-bind none",
                        600, dir);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    gReferenceSha = summary(dir + "/out")["params_sha256"];
  }
};

TEST_F(InplaceRescale, AChainOfShrinksGrowsAndPlacementChangesKeepsTheDdpBits) {
  ASSERT_FALSE(gReferenceSha.empty());
  const std::string dir = freshDir("rescale_chain");
  const std::string out = dir + "/out";
  // More loader threads than the reference: they change nothing either.
  BackgroundJob job(4, jobFlags() + " --workers 2 --output-dir " + out, dir);
  ASSERT_TRUE(job.waitForControl(out)) << job.log();
  auto results = queueCommands(
      {
          "rescale " + out + " --processes 2 --at-step 80",   // 4 -> 2 at an epoch boundary
          "placement " + out + " 3,1 --at-step 84",           // mid-epoch
          "rescale " + out + " --processes 3 --placement 1,2,1",  // grow: a started process joins
          "rescale " + out + " --processes 1",                // back to the lead alone
          "rescale " + out + " --processes 4",                // grow by three
      },
      out, dir);
  for (const auto& r : results) EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_NE(results[2].out.find("1 process(es) started"), std::string::npos) << results[2].out;
  ASSERT_EQ(job.wait(), 0) << job.log();
  EXPECT_EQ(summary(out)["params_sha256"], gReferenceSha) << job.log();
  tl::testing::recordConsistencyCells(
      "cnn (in-place test job)", "exact",
      {{"ddp -np 4", gReferenceSha},
       {"in place 4 -> 2 -> 3,1 -> 1,2,1 -> 1 -> 4 (tl-ctl)", summary(out)["params_sha256"]}});
  EXPECT_EQ(summary(out)["inplace_rescales"], 5);
  EXPECT_EQ(summary(out)["processes"], 4);

  auto events = rescaleEvents(out);
  ASSERT_EQ(events.size(), 5u);
  const std::vector<std::pair<std::string, std::string>> layouts = {
      {"1,1,1,1", "2,2"}, {"2,2", "3,1"}, {"3,1", "1,2,1"}, {"1,2,1", "4"}, {"4", "1,1,1,1"}};
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["from"], layouts[i].first) << i;
    EXPECT_EQ(events[i]["to"], layouts[i].second) << i;
    EXPECT_GT(events[i]["bytes_moved"].get<int64_t>(), 0) << i;
  }
  EXPECT_EQ(events[0]["step"], 80);
  EXPECT_EQ(events[0]["step"].get<int>() % kStepsPerEpoch, 0);
  EXPECT_EQ(events[1]["step"], 84);
  EXPECT_EQ(events[2]["started_processes"], 1);
  EXPECT_EQ(events[4]["started_processes"], 3);
}

// Issue 43: the joiners' warm-up is on by default (the chain above grows with it); off, and
// with every member timing its first steps on the new layout (bench_inplace_rescale's
// TL_RESCALE_STEP_TIMES: one extra allgather two steps after each change), the bits stay the
// DDP run's, and the lead records each process's first two steps, the joiners marked.
TEST_F(InplaceRescale, StepTimesAndAGrowWithoutWarmUpKeepTheDdpBits) {
  ASSERT_FALSE(gReferenceSha.empty());
  const std::string dir = freshDir("rescale_step_times");
  const std::string out = dir + "/out";
  BackgroundJob job(4, jobFlags() + " --output-dir " + out, dir,
                    "env TL_RESCALE_STEP_TIMES=1 TL_JOIN_WARMUP=0 " + tl::testing::mpirunPrefix(4));
  ASSERT_TRUE(job.waitForControl(out)) << job.log();
  auto results = queueCommands({"rescale " + out + " --processes 2 --at-step 40", "rescale " + out + " --processes 4"},
                               out, dir);
  for (const auto& r : results) EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  ASSERT_EQ(job.wait(), 0) << job.log();
  EXPECT_EQ(summary(out)["params_sha256"], gReferenceSha) << job.log();
  const auto events = rescaleEvents(out);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["started_processes"], 2);
  for (const auto& e : events) {
    EXPECT_GE(e["boundary_s"].get<double>(), 0.0);
    EXPECT_LE(e["transfer_s"].get<double>(), e["layout_change_s"].get<double>());
  }
  EXPECT_EQ(events[0]["transfer_s"].get<double>(), 0.0);  // a shrink moves no replica
  std::vector<json> steps;
  std::ifstream metrics(out + "/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    json j = json::parse(line);
    if (j["type"] == "rescale_steps") steps.push_back(j);
  }
  ASSERT_EQ(steps.size(), 2u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i]["step"], events[i]["step"]) << i;
    const auto& processes = steps[i]["processes"];
    ASSERT_EQ(processes.size(), i == 0 ? 2u : 4u) << steps[i];
    int joined = 0;
    for (size_t r = 0; r < processes.size(); ++r) {
      EXPECT_EQ(processes[r]["rank"], int(r));
      ASSERT_EQ(processes[r]["wall_s"].size(), 2u);
      ASSERT_EQ(processes[r]["cpu_s"].size(), 2u);
      EXPECT_GT(processes[r]["wall_s"][0].get<double>(), 0.0);
      joined += processes[r]["joined"].get<bool>() ? 1 : 0;
    }
    EXPECT_EQ(joined, i == 0 ? 0 : 2) << steps[i];
  }
}

TEST_F(InplaceRescale, RescalesMixWithCheckpointRestartAndWaitForCheckpointWrites) {
  ASSERT_FALSE(gReferenceSha.empty());
  const std::string dir = freshDir("rescale_ckpt");
  const std::string out = dir + "/out";
  {
    // Checkpoints every 3 steps: requests keep meeting a checkpoint write at their boundary.
    BackgroundJob job(2, jobFlags() + " --checkpoint-every 3 --output-dir " + out, dir);
    ASSERT_TRUE(job.waitForControl(out)) << job.log();
    auto results = queueCommands({"checkpoint " + out + " --at-step 62", "placement " + out + " 1,3 --at-step 62",
                                  "rescale " + out + " --processes 3", "stop " + out + " --checkpoint"},
                                 out, dir);
    for (const auto& r : results) EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    EXPECT_NE(results[0].out.find("checkpoint at step 62"), std::string::npos) << results[0].out;
    EXPECT_NE(results[3].out.find("with a checkpoint in"), std::string::npos) << results[3].out;
    ASSERT_EQ(job.wait(), 0) << job.log();
    auto events = rescaleEvents(out);
    ASSERT_EQ(events.size(), 2u);
    // One change per boundary: the placement waits for the requested checkpoint (at 62) and,
    // at 63, for the periodic one.
    EXPECT_EQ(events[0]["step"], 63);
    EXPECT_EQ(events[1]["to"], "2,1,1");
  }
  // Resumed on one process with other loader threads, then grown in place again.
  const std::string dir2 = freshDir("rescale_ckpt_resume");
  BackgroundJob resumed(1, std::string(" --resume ") + out + "/checkpoint --workers 3 --output-dir " + out, dir2);
  ASSERT_TRUE(resumed.waitForControl(out)) << resumed.log();
  auto r = runCommand(ctl() + "rescale " + out + " --processes 2", 200, dir2);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  ASSERT_EQ(resumed.wait(), 0) << resumed.log();
  EXPECT_EQ(summary(out)["params_sha256"], gReferenceSha) << resumed.log();
}

int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_F(InplaceRescale, BadRequestsAFailedGrowAWrongKeyAndAFloodLeaveTheJobAsItWas) {
  ASSERT_FALSE(gReferenceSha.empty());
  const std::string dir = freshDir("rescale_bad");
  const std::string out = dir + "/out";
  // Three slots and no oversubscription: a grow past them must be refused before it reaches
  // mpirun.
  BackgroundJob job(2, jobFlags() + " --output-dir " + out, dir,
                    "env -u PRTE_MCA_rmaps_default_mapping_policy OMPI_MCA_rmaps_base_oversubscribe=0 " + std::string(TL_MPIEXEC) + " --host localhost:3 -np 2 ");
  ASSERT_TRUE(job.waitForControl(out)) << job.log();
  struct Case {
    std::string command;
    int exitCode;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"rescale " + out + " --processes 5", 3, "at most 4 processes"},
      {"placement " + out + " 3,2", 3, "sums to 5 but the job has 4 logical workers"},
      {"placement " + out + " 1,1,2", 3, "has 3 entries for 2 processes"},
      {"rescale " + out + " --remove-ranks 0", 3, "rank 0 is the job's lead"},
      {"rescale " + out + " --remove-ranks 7", 3, "the job has ranks 0 to 1, not 7"},
      {"rescale " + out + " --processes 4", 3, "more processes than there are slots: mpirun's allocation has 3 slots and 2 are in use"},
      {"rescale " + out + " --processes 3 --hosts no-such-host.invalid:1", 3, "host 'no-such-host.invalid' cannot be reached"},
      {"rescale " + out + " --processes 3 --hosts localhost:2", 3, "--hosts names 2 new processes but the rescale starts 1"},
      {"checkpoint " + out + " --at-step 1", 3, "--at-step 1 has passed"},
      {"stop " + out + " --at-step 100000", 3, "the job ends after step " + std::to_string(kSteps)},
      {"rescale " + out + " --processes 3 --placement 2,2", 2, "2 entries for 3 processes"},
      {"rescale " + out + " --processes 0", 2, "--processes"},
  };
  for (const Case& c : cases) {
    auto r = runCommand(ctl() + c.command, 200, dir);
    EXPECT_EQ(r.exitCode, c.exitCode) << c.command << ": " << r.out << r.err;
    EXPECT_NE((r.out + r.err).find(c.says), std::string::npos) << c.command << ": " << r.out << r.err;
  }
  // A grow whose new process cannot get ready (its data went away): the job goes on.
  std::filesystem::rename(gDataDir, gDataDir + ".moved");
  auto failedGrow = runCommand(ctl() + "rescale " + out + " --processes 3", 200, dir);
  std::filesystem::rename(gDataDir + ".moved", gDataDir);
  EXPECT_EQ(failedGrow.exitCode, 1) << failedGrow.out << failedGrow.err;
  EXPECT_NE(failedGrow.err.find("grow failed, the job goes on with 2 processes"), std::string::npos) << failedGrow.err;
  EXPECT_NE(failedGrow.err.find("could not get ready"), std::string::npos) << failedGrow.err;

  // Another job's key: refused before anything is read, and said so.
  const std::string other = freshDir("rescale_bad_key");
  {
    std::ofstream key(other + "/control.key");
    key << std::string(64, 'a') << "\n";
  }
  std::filesystem::permissions(other + "/control.key", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const json address = json::parse(slurp(out + "/control.json"));
  const int port = address["port"];
  auto wrongKey = runCommand(ctl() + "stop --address 127.0.0.1:" + std::to_string(port) + " --key-file " + other + "/control.key",
                             60, other);
  EXPECT_EQ(wrongKey.exitCode, 2) << wrongKey.out << wrongKey.err;
  EXPECT_NE(wrongKey.err.find("authenticat"), std::string::npos) << wrongKey.err;

  // A thousand connections, half of them sending garbage, while the job trains; a user is
  // still served, and the job's bits do not change.
  std::vector<int> fds;
  for (int i = 0; i < 1000; ++i) {
    int fd = connectTo(port);
    if (fd < 0) continue;
    if (i % 2) (void)!::write(fd, "GET / HTTP/1.0\r\n\r\n", 18);
    fds.push_back(fd);
  }
  EXPECT_GT(fds.size(), 500u);
  // An oversized frame (a header announcing 2 GiB), half a frame left hanging, and a client that
  // sends one byte at a time.
  const std::string oversized("TLCT\x01\x01\x00\x00\x7f\xff\xff\xff", 12);
  if (int fd = connectTo(port); fd >= 0) {
    (void)!::write(fd, oversized.data(), oversized.size());
    fds.push_back(fd);
  }
  if (int fd = connectTo(port); fd >= 0) {
    (void)!::write(fd, oversized.data(), 7);
    fds.push_back(fd);
  }
  if (int fd = connectTo(port); fd >= 0) {
    for (int i = 0; i < 5; ++i) {
      (void)!::write(fd, oversized.data() + i, 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    fds.push_back(fd);
  }
  auto status = runCommand(ctl() + "status " + out + " --json", 60, dir);
  for (int fd : fds) ::close(fd);
  ASSERT_EQ(status.exitCode, 0) << status.err;
  const json s = json::parse(status.out);
  EXPECT_EQ(s["processes"], 2);
  EXPECT_EQ(s["placement"], "2,2");

  ASSERT_EQ(job.wait(), 0) << job.log();
  EXPECT_EQ(summary(out)["params_sha256"], gReferenceSha) << job.log();
  EXPECT_EQ(summary(out)["inplace_rescales"], 0);
  // A finished job serves no more commands.
  auto late = runCommand(ctl() + "status " + out, 60, dir);
  EXPECT_NE(late.exitCode, 0);
  EXPECT_NE(late.err.find("is the job running?"), std::string::npos) << late.err;
}

}  // namespace
