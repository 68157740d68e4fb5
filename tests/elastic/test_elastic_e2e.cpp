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
#include <nlohmann/json.hpp>
#include <thread>

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
    auto run = runCommand(mpirun(2) + TL_LAUNCH_BIN + jobFlags() + " --output-dir " + ref, 300, ref);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    referenceHash() = summary(ref)["params_sha256"];
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

}  // namespace
