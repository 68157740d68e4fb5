// Checkpoint-restart end to end, with real tl-launch jobs under mpirun: SIGUSR1 stops a job at
// the next step boundary with a checkpoint, a resume on another process count finishes it with
// the uninterrupted run's bits, and bad resumes are refused with a clear message.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "elastic/checkpoint/checkpoint_file.h"

#include "tests/support/run_command.h"

extern char** environ;

namespace {

using tl::testing::countOccurrences;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gDataDir;
constexpr int kSteps = 24;

std::string mpirun(int np) { return tl::testing::mpirunPrefix(np); }

std::string jobFlags() {
  return std::string(" --dataset cifar10 --data-dir ") + gDataDir +
         " --model cnn --logical-workers 4 --batch 8 --seed 2 --log-every 0 --steps " + std::to_string(kSteps);
}

nlohmann::json summary(const std::string& dir) { return nlohmann::json::parse(slurp(dir + "/summary.json")); }

// `command` run from `dir` (runCommand runs it under timeout, which cannot cd).
std::string inFolder(const std::string& dir, const std::string& command) {
  return "sh -c 'cd " + dir + " && " + command + "'";
}

int countSteps(const std::string& metricsPath) {
  std::ifstream in(metricsPath);
  int steps = 0;
  for (std::string line; std::getline(in, line);) steps += line.find("\"type\":\"step\"") != std::string::npos;
  return steps;
}

class ElasticE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    gDataDir = tl::testing::makeSyntheticCifar("elastic_data", 256, 32, 3, &error);
    ASSERT_EQ(error, "");
    auto ref = freshDir("elastic_reference");
    // (Its checkpoint at step 20 is the one the tests of inconsistent checkpoints edit.)
    auto run = runCommand(
        mpirun(2) + TL_LAUNCH_BIN + jobFlags() + " --output-dir " + ref + " --checkpoint-every 20",
        300, ref);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    referenceHash() = summary(ref)["params_sha256"];
    referenceDir() = ref;
  }
  static std::string& referenceDir() {
    static std::string dir;
    return dir;
  }
  static std::string& referenceHash() {
    static std::string hash;
    return hash;
  }
};

TEST_F(ElasticE2E, SigusrStopsWithACheckpointAndAResumeOnOneProcessFinishesBitForBit) {
  auto out = freshDir("elastic_signal");
  auto ckpt = out + "/ckpt";
  // Slow the job down (one loader thread, tiny prefetch) is not needed: 24 steps of 4 ESTs take
  // a few seconds, and the signal goes as soon as two steps are logged.
  std::string cmd = mpirun(2) + TL_LAUNCH_BIN + jobFlags() + " --output-dir " + out + " --checkpoint-dir " +
                    ckpt + " >" + out + "/stdout 2>" + out + "/stderr";
  pid_t pid;
  const char* argv[] = {"/bin/sh", "-c", nullptr, nullptr};
  std::string execCmd = "exec " + cmd;  // the shell becomes mpirun, so the signal reaches it
  argv[2] = execCmd.c_str();
  ASSERT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (countSteps(out + "/metrics.jsonl") < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(countSteps(out + "/metrics.jsonl"), 2) << slurp(out + "/stderr");
  ASSERT_EQ(kill(pid, SIGUSR1), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "mpirun died of a signal";
  EXPECT_EQ(WEXITSTATUS(status), 0) << slurp(out + "/stderr");
  auto stdoutText = slurp(out + "/stdout");
  EXPECT_EQ(countOccurrences(stdoutText, "tl-launch: checkpoint at step"), 1) << stdoutText;
  EXPECT_NE(stdoutText.find("written to " + ckpt), std::string::npos) << stdoutText;
  EXPECT_NE(stdoutText.find("--resume " + ckpt), std::string::npos) << stdoutText;
  auto stopped = summary(out);
  EXPECT_TRUE(stopped["stopped_at_checkpoint"].get<bool>());
  const int stoppedAt = stopped["steps"];
  EXPECT_LT(stoppedAt, kSteps) << "the signal came too late to test anything";

  auto resumeOut = freshDir("elastic_signal_resume");
  auto r = runCommand(mpirun(1) + TL_LAUNCH_BIN + " --resume " + ckpt + " --output-dir " + resumeOut, 300, resumeOut);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto done = summary(resumeOut);
  EXPECT_EQ(done["steps"], kSteps);
  EXPECT_EQ(done["steps_this_run"], kSteps - stoppedAt);
  EXPECT_EQ(done["params_sha256"], referenceHash());
}

TEST_F(ElasticE2E, PeriodicCheckpointsAndRefusedOrDamagedResumes) {
  auto out = freshDir("elastic_periodic");
  auto ckpt = out + "/ckpt";
  auto r = runCommand(mpirun(2) + TL_LAUNCH_BIN + jobFlags() + " --output-dir " + out + " --checkpoint-dir " + ckpt +
                          " --checkpoint-every 10",
                      300, out);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(std::filesystem::exists(ckpt + "/checkpoint.tl"));

  // The last periodic checkpoint is step 20: a resume on 3 processes runs the last 4 steps.
  auto cont = freshDir("elastic_periodic_resume");
  auto c = runCommand(mpirun(3) + TL_LAUNCH_BIN + " --resume " + ckpt + " --placement 2,1,1 --output-dir " + cont,
                      300, cont);
  ASSERT_EQ(c.exitCode, 0) << c.err;
  EXPECT_EQ(summary(cont)["steps_this_run"], 4);
  EXPECT_EQ(summary(cont)["params_sha256"], referenceHash());

  // A resume that would change the job's definition is refused, naming each flag.
  auto bad = freshDir("elastic_refused");
  auto refused = runCommand(mpirun(2) + TL_LAUNCH_BIN + " --resume " + ckpt + " --batch 16 --seed 9 --logical-workers 2",
                            60, bad);
  EXPECT_EQ(refused.exitCode, 2) << refused.err;
  EXPECT_EQ(countOccurrences(refused.err, "tl-launch: error:"), 1) << refused.err;
  EXPECT_NE(refused.err.find("--batch 16 (the checkpoint's job has 8)"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--seed 9 (the checkpoint's job has 2)"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--logical-workers 2 (the checkpoint's job has 4)"), std::string::npos) << refused.err;

  // Damaged checkpoints: a clear error naming the file, on every rank, no crash.
  const std::string file = ckpt + "/checkpoint.tl";
  auto damaged = freshDir("elastic_damaged");
  std::filesystem::copy(ckpt, damaged + "/flipped");
  {
    std::fstream f(damaged + "/flipped/checkpoint.tl", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(std::filesystem::file_size(file) / 2));
    char byte;
    f.read(&byte, 1);
    f.seekp(-1, std::ios::cur);
    byte = char(byte ^ 0x40);
    f.write(&byte, 1);
  }
  std::filesystem::copy(ckpt, damaged + "/truncated");
  std::filesystem::resize_file(damaged + "/truncated/checkpoint.tl", std::filesystem::file_size(file) - 1000);
  std::filesystem::create_directories(damaged + "/empty");
  struct Case {
    std::string dir, expected;
  };
  for (const Case& k : {Case{damaged + "/flipped", "is corrupt: checksum mismatch"},
                        Case{damaged + "/truncated", "is truncated"},
                        Case{damaged + "/empty", "no checkpoint found"}}) {
    auto res = runCommand(mpirun(2) + TL_LAUNCH_BIN + " --resume " + k.dir, 60, damaged);
    EXPECT_EQ(res.exitCode, 2) << k.dir << "\n" << res.err;
    EXPECT_EQ(countOccurrences(res.err, "tl-launch: error:"), 1) << res.err;
    EXPECT_NE(res.err.find(k.dir), std::string::npos) << res.err;
    EXPECT_NE(res.err.find(k.expected), std::string::npos) << k.expected << " in:\n" << res.err;
  }
}

// A checkpoint's SHA-256 is a checksum, not a signature: an edited, re-hashed checkpoint reads,
// and what it says must fit its job. Each is refused naming the file, never a flag.
TEST_F(ElasticE2E, InconsistentCheckpointsAreRefusedNamingTheFile) {
  auto out = freshDir("elastic_inconsistent");
  struct Case {
    std::string name, expected;
    std::function<void(nlohmann::json&)> edit;
  };
  const std::vector<Case> cases = {
      {"steps", "it is at step 30, past the end of its job of 24 steps",
       [](nlohmann::json& m) { m["steps_done"] = 30; }},
      {"batch", "its job has batch 0", [](nlohmann::json& m) { m["job"]["batch"] = 0; }},
      // Consistent by itself; only the data's plan (8 steps per epoch) shows the cursors wrong.
      {"cursors", "after step 20 (8 per epoch on this data) its ESTs are at epoch 2 position 32",
       [](nlohmann::json& m) {
         for (auto& e : m["ests"]) e["position"] = 40;
       }}};
  for (const Case& k : cases) {
    const std::string dir = out + "/" + k.name;
    std::filesystem::copy(referenceDir() + "/checkpoint", dir);
    tl::elastic::CheckpointData data = tl::elastic::readCheckpoint(dir + "/checkpoint.tl");
    k.edit(data.manifest);
    tl::elastic::writeCheckpoint(dir + "/checkpoint.tl", data);
    auto res = runCommand(mpirun(1) + TL_LAUNCH_BIN + " --resume " + dir, 60, out);
    EXPECT_EQ(res.exitCode, 2) << k.name << "\n" << res.err;
    EXPECT_EQ(countOccurrences(res.err, "tl-launch: error:"), 1) << res.err;
    EXPECT_NE(res.err.find("checkpoint '" + dir + "/checkpoint.tl' is inconsistent: " + k.expected),
              std::string::npos)
        << k.expected << " in:\n"
        << res.err;
    EXPECT_EQ(res.err.find("--batch"), std::string::npos) << res.err;
  }
}

// A checkpoint knows its data: a relative --data-dir resumed from another folder keeps reading
// the job's data, other data is refused naming what differs, and data that moved is accepted.
TEST_F(ElasticE2E, ResumeKeepsTheJobsDataAndRefusesOtherData) {
  namespace fs = std::filesystem;
  auto first = freshDir("elastic_data_first");
  auto elsewhere = freshDir("elastic_data_elsewhere");
  fs::copy(gDataDir, first + "/data");
  std::string error;
  // Same size as the job's data, other images: only the fingerprint tells them apart.
  auto lookalike = tl::testing::makeSyntheticCifar("elastic_data_lookalike", 256, 32, 9, &error);
  ASSERT_EQ(error, "");
  fs::copy(lookalike, elsewhere + "/data");
  auto small = tl::testing::makeSyntheticCifar("elastic_data_small", 100, 32, 3, &error);
  ASSERT_EQ(error, "");
  std::string flags = jobFlags();
  flags.replace(flags.find(gDataDir), gDataDir.size(), "data");
  auto r = runCommand(
      inFolder(first, mpirun(1) + TL_LAUNCH_BIN + flags + " --output-dir out --stop-at-step 4"),
      300, first);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string ckpt = first + "/out/checkpoint";

  // From another folder, without --data-dir: the job's own data, by its absolute path.
  auto same = runCommand(inFolder(elsewhere, mpirun(1) + TL_LAUNCH_BIN + " --resume " + ckpt +
                                                 " --output-dir " + elsewhere + "/out"),
                         300, elsewhere);
  ASSERT_EQ(same.exitCode, 0) << same.err;
  EXPECT_EQ(summary(elsewhere + "/out")["params_sha256"], referenceHash());

  // Other data, given relative to the other folder or absolute: refused, naming what differs.
  for (const auto& [dir, expected] :
       {std::pair<std::string, std::string>{"data", "the same files and sizes, but other contents"},
        {small, "data_batch_1.bin has 61460 bytes (then 159796)"}}) {
    auto res = runCommand(
        inFolder(elsewhere, mpirun(1) + TL_LAUNCH_BIN + " --resume " + ckpt + " --data-dir " + dir),
        60, elsewhere);
    EXPECT_EQ(res.exitCode, 2) << res.err;
    EXPECT_EQ(countOccurrences(res.err, "tl-launch: error:"), 1) << res.err;
    EXPECT_NE(res.err.find("is not the data the job of checkpoint '" + ckpt +
                           "/checkpoint.tl' trained on"),
              std::string::npos)
        << res.err;
    EXPECT_NE(res.err.find(expected), std::string::npos) << expected << " in:\n" << res.err;
  }

  // The job's data in another folder: accepted (its fingerprint does not depend on the folder).
  fs::rename(first + "/data", first + "/moved");
  auto moved = runCommand(mpirun(1) + TL_LAUNCH_BIN + " --resume " + ckpt + " --data-dir " + first +
                              "/moved --stop-at-step 5 --checkpoint-dir " + first + "/ck2",
                          300, first);
  EXPECT_EQ(moved.exitCode, 0) << moved.err;
}

}  // namespace
