// End-to-end: tl-launch under real mpirun on small synthetic CIFAR-format data.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/run_command.h"

extern char** environ;

namespace {

using tl::testing::CommandResult;
using tl::testing::countOccurrences;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gDataDir;

std::string mpirun(int np) { return tl::testing::mpirunPrefix(np); }

int countSteps(const std::string& metricsPath) {
  std::ifstream in(metricsPath);
  int steps = 0;
  for (std::string line; std::getline(in, line);)
    steps += line.find("\"type\":\"step\"") != std::string::npos;
  return steps;
}

// The processes whose parent is `parent` (from /proc).
std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = slurp(entry.path().string() + "/stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      children.push_back(pid_t(std::stoi(name)));
    }
  }
  return children;
}

class LaunchE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    gDataDir = tl::testing::makeSyntheticCifar("e2e_data", 512, 256, 1, &error);
    ASSERT_EQ(error, "");
  }

  // Runs tl-launch on the synthetic data with `np` processes; `extra` appended to the flags.
  // `env`: a prefix such as "env TL_TEST_UPDATE_DELAY_MS=40 " (timing only).
  CommandResult launch(int np, const std::string& outDir, const std::string& extra,
                       const std::string& model = "--model cnn", int timeout = 240,
                       const std::string& env = "") {
    std::string cmd = env + mpirun(np) + TL_LAUNCH_BIN + " --dataset cifar10 --data-dir " + gDataDir + " " +
                      model + " --batch 16 --lr 0.05 --momentum 0.9 --log-every 0 --output-dir " +
                      outDir + " " + extra;
    return runCommand(cmd, timeout, outDir);
  }

  static nlohmann::json summary(const std::string& outDir) {
    return nlohmann::json::parse(slurp(outDir + "/summary.json"));
  }
};

TEST_F(LaunchE2E, TrainsWritesMetricsAndTheLossDecreases) {
  auto out = freshDir("e2e_train");
  // 512 samples / 2 ranks / batch 16 = 16 steps per epoch: 40 steps cross two epoch boundaries.
  auto r = launch(2, out, "--steps 40 --eval --workers 2");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  auto s = summary(out);
  EXPECT_EQ(s["steps"], 40);
  EXPECT_EQ(s["epochs_completed"], 2);
  EXPECT_EQ(s["processes"], 2);
  EXPECT_EQ(s["params_sha256"].get<std::string>().size(), 64u);
  EXPECT_GT(s["images_per_s"].get<double>(), 0);
  EXPECT_GT(s["test_acc"].get<double>(), 0.2) << "chance is 0.1 on 10 classes";

  std::ifstream metrics(out + "/metrics.jsonl");
  std::vector<double> losses;
  int epochs = 0;
  for (std::string line; std::getline(metrics, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "step") {
      losses.push_back(j["loss"]);
      EXPECT_TRUE(j.contains("acc")) << "class scores: accuracy per step";
    }
    if (j["type"] == "epoch") {
      ++epochs;
      EXPECT_GE(j["total_s"].get<double>(), j["compute_s"].get<double>());
      EXPECT_TRUE(j.contains("data_wait_s") && j.contains("comm_s") && j.contains("train_acc"));
    }
  }
  ASSERT_EQ(losses.size(), 40u);
  EXPECT_EQ(epochs, 3) << "two full epochs and the partial third";
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    first += losses[i];
    last += losses[losses.size() - 1 - i];
  }
  EXPECT_LT(last, 0.7 * first) << "loss did not decrease: first5=" << first / 5 << " last5=" << last / 5;
  EXPECT_NE(r.out.find("avg loss"), std::string::npos) << "epoch table missing:\n" << r.out;
}

TEST_F(LaunchE2E, SameSeedGivesSameParamsWhateverTheLoaderThreads) {
  auto a = freshDir("e2e_seed_a"), b = freshDir("e2e_seed_b"), c = freshDir("e2e_seed_c");
  ASSERT_EQ(launch(2, a, "--steps 12 --seed 3 --workers 2").exitCode, 0);
  ASSERT_EQ(launch(2, b, "--steps 12 --seed 3 --workers 0").exitCode, 0);
  ASSERT_EQ(launch(2, c, "--steps 12 --seed 4 --workers 2").exitCode, 0);
  EXPECT_EQ(summary(a)["params_sha256"], summary(b)["params_sha256"]);
  EXPECT_NE(summary(a)["params_sha256"], summary(c)["params_sha256"]);
}

TEST_F(LaunchE2E, CoordinatorResizingTheLoaderPoolChangesNoBit) {
  auto fixed = freshDir("e2e_auto_fixed"), tuned = freshDir("e2e_auto_tuned");
  auto runDir = freshDir("e2e_auto_coordinator");
  // The coordinator trusts only a private run folder, whatever the umask made it.
  std::filesystem::permissions(runDir, std::filesystem::perms::owner_all);
  ASSERT_EQ(launch(2, fixed, "--steps 80 --seed 5 --workers 2").exitCode, 0);
  // Each update held 40 ms (TL_TEST_UPDATE_DELAY_MS: timing only, the bits do not change), so
  // that the job lasts over 3 s on any machine: on a fast one its 80 steps took under a second
  // and ended before the coordinator's first resize.
  auto r = launch(2, tuned, "--steps 80 --seed 5 --workers auto --coordinator-dir " + runDir,
                  "--model cnn", 240, "env TL_TEST_UPDATE_DELAY_MS=40 ");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto s = summary(tuned);
  EXPECT_TRUE(s["loader"]["auto"].get<bool>());
  // The coordinator explores pool sizes while it learns a job (about one window per second).
  EXPECT_GE(s["loader"]["resizes"].get<int>(), 1) << "the coordinator never resized the pool";
  EXPECT_EQ(s["params_sha256"], summary(fixed)["params_sha256"]);
  EXPECT_TRUE(std::filesystem::exists(runDir + "/coordinator.log"));
}

TEST_F(LaunchE2E, RunsOnThreeProcessesWithResNet20) {
  auto out = freshDir("e2e_resnet");
  auto r = launch(3, out, "--steps 3", "--model resnet --depth 20");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(summary(out)["processes"], 3);
}

TEST_F(LaunchE2E, SavesTheInitialModelForPyTorch) {
  auto out = freshDir("e2e_save");
  std::string path = out + "/init.pt";
  auto r = launch(2, out, "--steps 0 --save-model " + path);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(std::filesystem::exists(path));
  auto py = runCommand("/usr/bin/python3 -c \"import torch,sys; sd=torch.load(sys.argv[1], weights_only=False); "
                       "print(len(sd), sd['conv1.weight'].shape[1])\" " + path,
                       120, out);
  if (py.err.find("No module named 'torch'") != std::string::npos) GTEST_SKIP() << "no python3-torch";
  ASSERT_EQ(py.exitCode, 0) << py.err;
  EXPECT_NE(py.out.find(" 3"), std::string::npos) << "conv1 should take 3 input channels: " << py.out;
}

struct BadInput {
  std::string name;
  std::string flags;
  std::string expected;  // must appear exactly once in stderr
};

TEST_F(LaunchE2E, BadInputFailsFastWithOneClearMessageOnEveryRank) {
  auto work = freshDir("e2e_bad");
  // A copy of the data with a truncated training file.
  auto truncated = work + "/truncated";
  std::filesystem::copy(gDataDir, truncated);
  auto victim = truncated + "/data_batch_2.bin";
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) - 100);
  std::ofstream(work + "/a-file") << "x";

  std::vector<BadInput> cases = {
      {"missing data", "--data-dir " + work + "/nowhere", work + "/nowhere"},
      {"truncated file", "--data-dir " + truncated, "data_batch_2.bin"},
      {"unknown model", "--model vgg19", "--model: unknown value 'vgg19'"},
      {"unknown flag", "--frobnicate 3", "unknown flag '--frobnicate'"},
      {"cuda without gpu", "--device cuda", "--device cuda: no CUDA device"},
      {"batch zero", "--batch 0", "--batch: must be at least 1"},
      {"impossible placement", "--logical-workers 4 --placement 3,2",
       "places 5 logical workers but the job has 4"},
      {"too few logical workers", "--logical-workers 1",
       "--logical-workers 1 is less than the 2 processes"},
      {"unwritable output", "--output-dir " + work + "/a-file/out", "a-file/out"},
      {"learning rate beyond float", "--lr 1e300", "--lr: must be between"},
  };
  for (const auto& c : cases) {
    // Later flags override nothing: tl-launch refuses repeats, so each case adds its own.
    std::string cmd = mpirun(2) + TL_LAUNCH_BIN + " --dataset cifar10 --steps 2 " +
                      (c.flags.find("--data-dir") == std::string::npos ? "--data-dir " + gDataDir + " " : "") +
                      c.flags;
    auto r = runCommand(cmd, 60, work);
    EXPECT_NE(r.exitCode, 0) << c.name;
    EXPECT_NE(r.exitCode, 124) << c.name << ": hung";
    EXPECT_EQ(countOccurrences(r.err, "tl-launch: error:"), 1) << c.name << "\n" << r.err;
    EXPECT_EQ(countOccurrences(r.err, c.expected), 1) << c.name << ": expected '" << c.expected
                                                      << "' in:\n" << r.err;
    EXPECT_LT(r.seconds, 30) << c.name;
  }
}

// --clip-grad-norm records each step's norm before clipping, bounds the update, and stops a job
// whose gradient is not finite, naming the step, on every rank with one message.
TEST_F(LaunchE2E, ClippingRecordsTheNormAndStopsOnANonFiniteOne) {
  auto out = freshDir("e2e_clip");
  auto r = launch(2, out, "--steps 6 --clip-grad-norm 0.5");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  int steps = 0;
  std::ifstream metrics(out + "/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] != "step") continue;
    ++steps;
    ASSERT_TRUE(j.contains("grad_norm")) << line;
    EXPECT_GT(j["grad_norm"].get<double>(), 0.5) << "the CNN's first gradients are larger than the bound";
  }
  EXPECT_EQ(steps, 6);
  auto plain = freshDir("e2e_clip_off");
  ASSERT_EQ(launch(2, plain, "--steps 6").exitCode, 0);
  EXPECT_NE(summary(plain)["params_sha256"], summary(out)["params_sha256"]) << "the bound never bit";

  // NaN inputs: the float32 reduction passes the NaN gradient on, and clipping stops the job.
  auto work = freshDir("e2e_clip_nan");
  auto gen = runCommand(std::string(TL_DATA_BIN) + " tensors-synth --out " + work + "/data --train 64 --test 16 " +
                        "--shape 1,8,8 --classes 4", 60, work);
  ASSERT_EQ(gen.exitCode, 0) << gen.err;
  {
    const std::string x = work + "/data/train_x.npy";
    std::string bytes = slurp(x);
    const size_t header = 10 + size_t(uint8_t(bytes[8])) + 256 * size_t(uint8_t(bytes[9]));  // .npy v1
    const uint32_t nan = 0x7fc00000u;
    for (size_t i = header; i + 4 <= bytes.size(); i += 4) std::memcpy(&bytes[i], &nan, 4);
    std::ofstream(x, std::ios::binary | std::ios::trunc) << bytes;
  }
  auto bad = runCommand(mpirun(2) + TL_LAUNCH_BIN + " --dataset tensors --data-dir " + work + "/data --model mlp " +
                            "--batch 8 --steps 3 --reduction fp32 --clip-grad-norm 1 --log-every 0 --output-dir " +
                            work + "/out",
                        120, work);
  EXPECT_NE(bad.exitCode, 0);
  EXPECT_EQ(countOccurrences(bad.err, "tl-launch: error:"), 1) << bad.err;
  EXPECT_EQ(countOccurrences(bad.err, "step 1: the gradient's global norm is nan"), 1) << bad.err;
}

// The GPT recipe's knobs (issue 40): a warm-up and linear decay in steps, weight decay on
// matrices only, clipping, 2 micro-batches. DDP mode (4 processes), 3,1 and a checkpoint at step
// 3 resumed on one process give one params_sha256 and one learning rate per step, the schedule
// nanoGPT's get_lr; the summary records the resolved settings; decaying every parameter instead,
// or one micro-batch, is another job.
TEST_F(LaunchE2E, GptRecipeKnobsGiveOneResultOnEveryPlacementAndAcrossARestart) {
  const std::string knobs =
      " --logical-workers 4 --steps 8 --weight-decay 0.05 --lr-schedule linear --warmup-steps 2 --min-lr 0.005"
      " --clip-grad-norm 1 --workers 0 --micro-batches 2";
  const std::string matrices = knobs + " --weight-decay-on matrices";
  const auto stepLrs = [](const std::string& out) {
    std::map<int64_t, double> lrs;
    std::ifstream metrics(out + "/metrics.jsonl");
    for (std::string line; std::getline(metrics, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["type"] == "step") lrs[j["step"].get<int64_t>()] = j["lr"].get<double>();
    }
    return lrs;
  };
  const std::string ddp = freshDir("e2e_recipe_ddp");
  auto r = launch(4, ddp, matrices);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string sha = summary(ddp)["params_sha256"];
  const auto lrs = stepLrs(ddp);
  ASSERT_EQ(lrs.size(), 8u);
  // W 2, D 7 (the last step's index): (i + 1) / 3 of 0.05, then down to 0.005 at step index 7.
  EXPECT_EQ(lrs.at(1), 0.05 * (1.0 / 3.0));
  EXPECT_EQ(lrs.at(2), 0.05 * (2.0 / 3.0));
  EXPECT_EQ(lrs.at(3), 0.05);
  EXPECT_NEAR(lrs.at(6), 0.005 + (1.0 - 3.0 / 5.0) * 0.045, 1e-15);
  EXPECT_NEAR(lrs.at(8), 0.005, 1e-15);
  const auto config = summary(ddp)["config"];
  EXPECT_EQ(config["lr_schedule"]["kind"], "linear");
  EXPECT_EQ(config["lr_schedule"]["warmup_steps"], 2);
  EXPECT_EQ(config["lr_schedule"]["decay_steps"], 7) << "the resolved default: the last step";
  EXPECT_EQ(config["weight_decay_on"], "matrices");
  EXPECT_EQ(config["micro_batches"], 2);

  const std::string split = freshDir("e2e_recipe_31");
  r = launch(2, split, matrices + " --placement 3,1");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(summary(split)["params_sha256"], sha) << "3,1 against DDP mode";
  EXPECT_EQ(stepLrs(split), lrs);

  const std::string first = freshDir("e2e_recipe_ck");
  r = launch(2, first, matrices + " --stop-at-step 3");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string resumed = freshDir("e2e_recipe_resumed");
  r = runCommand(mpirun(1) + TL_LAUNCH_BIN + " --resume " + first + "/checkpoint --log-every 0 --output-dir " +
                     resumed,
                 240, resumed);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(summary(resumed)["params_sha256"], sha) << "checkpoint at step 3, resumed on one process";
  for (const auto& [step, lr] : stepLrs(resumed)) EXPECT_EQ(lr, lrs.at(step)) << "resumed step " << step;
  EXPECT_EQ(summary(resumed)["config"]["lr_schedule"]["decay_steps"], 7);

  const std::string all = freshDir("e2e_recipe_all");
  r = launch(2, all, knobs);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(summary(all)["params_sha256"], sha) << "--weight-decay-on matrices changed nothing";
  const std::string whole = freshDir("e2e_recipe_k1");
  std::string oneBatch = matrices;
  oneBatch.replace(oneBatch.find(" --micro-batches 2"), 18, "");
  r = launch(2, whole, oneBatch);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(summary(whole)["params_sha256"], sha) << "K = 2 gave K = 1's bits";

  // A batch that K does not divide: one error naming both flags.
  r = runCommand(std::string(TL_LAUNCH_BIN) + " --check --dataset cifar10 --data-dir " + gDataDir +
                     " --model cnn --batch 16 --micro-batches 3",
                 60, whole);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(countOccurrences(r.err, "--micro-batches 3: --batch 16 is not divisible by it"), 1) << r.err;
}

// Faults of the newcomer's corpus: a folder where a batch file belongs, and a flag given an
// empty value with `=`. Each is one line naming the file or flag, and exit status 2.
TEST_F(LaunchE2E, FolderForADataFileAndEmptyFlagValueAreOneLineWithStatus2) {
  auto work = freshDir("e2e_corpus");
  auto data = work + "/data";
  std::filesystem::copy(gDataDir, data);
  auto victim = data + "/data_batch_2.bin";
  std::filesystem::remove(victim);
  std::filesystem::create_directories(victim + "/inside");
  struct Case {
    std::string flags, expected;
  };
  for (const Case& c : {Case{"--data-dir " + data + " --steps 2",
                             "CIFAR-10 file '" + victim + "' is not a regular file (a folder)"},
                        Case{"--data-dir " + gDataDir + " --batch= --steps 2",
                             "--batch: expected an integer, got ''"}}) {
    auto r = runCommand(mpirun(2) + TL_LAUNCH_BIN + " --dataset cifar10 " + c.flags, 60, work);
    EXPECT_EQ(r.exitCode, 2) << c.flags << "\n" << r.err;
    EXPECT_EQ(countOccurrences(r.err, "tl-launch: error: " + c.expected), 1) << r.err;
    EXPECT_EQ(countOccurrences(r.err, "tl-launch: error:"), 1) << r.err;
  }
}

// Every path the job writes is checked (or its folder created) before the first step: a
// --save-model that cannot be written must not cost the whole training run.
TEST_F(LaunchE2E, OutputPathsAreCheckedOrCreatedBeforeTheFirstStep) {
  auto work = freshDir("e2e_outputs");
  std::ofstream(work + "/a-file") << "x";
  auto bad = work + "/bad";
  std::filesystem::create_directories(bad);
  auto r = launch(2, bad, "--steps 40 --save-model " + work + "/a-file/m.pt");
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_EQ(countOccurrences(r.err, "tl-launch: error:"), 1) << r.err;
  EXPECT_EQ(countOccurrences(r.err, "--save-model '" + work + "/a-file/m.pt'"), 1) << r.err;
  EXPECT_EQ(countSteps(bad + "/metrics.jsonl"), 0) << "trained before finding out";
  EXPECT_FALSE(std::filesystem::exists(bad + "/summary.json"));

  auto good = work + "/good";
  std::filesystem::create_directories(good);
  auto ok = launch(1, good, "--steps 2 --save-model " + work + "/new/sub/m.pt");
  ASSERT_EQ(ok.exitCode, 0) << ok.err;
  EXPECT_TRUE(std::filesystem::exists(work + "/new/sub/m.pt"));
}

// A live job holds its output folder: a second job in the same folder (here through a
// symlinked alias) is refused before it writes anything; a job killed without cleaning up
// leaves a lock the next job takes over, saying so.
TEST_F(LaunchE2E, OneLiveJobPerOutputFolder) {
  auto work = freshDir("e2e_lock");
  auto real = work + "/real", alias = work + "/alias";
  std::filesystem::create_directories(real);
  std::filesystem::create_directory_symlink(real, alias);
  const std::string flags = std::string(TL_LAUNCH_BIN) + " --dataset cifar10 --data-dir " +
                            gDataDir +
                            " --model cnn --batch 16 --log-every 0 --workers 0 --output-dir ";
  std::string first = "exec " + mpirun(1) + flags + real + " --steps 100000 >" + work +
                      "/first.out 2>" + work + "/first.err";
  const char* argv[] = {"/bin/sh", "-c", first.c_str(), nullptr};
  pid_t mpirunPid;
  ASSERT_EQ(posix_spawn(&mpirunPid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ),
            0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (countSteps(real + "/metrics.jsonl") < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(countSteps(real + "/metrics.jsonl"), 1) << slurp(work + "/first.err");

  auto second = runCommand(mpirun(1) + flags + alias + " --steps 2", 60, work);
  // The first job's rank dies without any chance to clean up; mpirun then ends.
  for (pid_t rank : childrenOf(mpirunPid)) ::kill(rank, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(mpirunPid, &status, 0), mpirunPid);
  EXPECT_EQ(second.exitCode, 2) << second.out << second.err;
  EXPECT_EQ(countOccurrences(second.err, "tl-launch: error:"), 1) << second.err;
  EXPECT_NE(second.err.find("is in use by another job"), std::string::npos) << second.err;

  auto third = runCommand(mpirun(1) + flags + alias + " --steps 2", 60, work);
  EXPECT_EQ(third.exitCode, 0) << third.err;
  EXPECT_NE((third.out + third.err).find("taking over"), std::string::npos)
      << third.out << third.err;
}

// Running out of memory while building the job is one line naming what was being built and
// how much it needed, not libtorch's message with a C++ stack trace.
TEST_F(LaunchE2E, OutOfMemoryIsOneLineNamingWhatWasBeingBuilt) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer needs more address space than the limit leaves";
#endif
  auto work = freshDir("e2e_oom");
  auto images = work + "/images";
  auto gen = runCommand(std::string(TL_DATA_BIN) + " jpeg-synth --out " + images +
                            " --classes 2 --train 4 --val 2 --min-size 8 --max-size 16",
                        60, work);
  ASSERT_EQ(gen.exitCode, 0) << gen.err;
  // An MLP on 3x4096x4096 inputs: a first layer of 256 x 50 M floats (48 GiB), under a 4 GB
  // address-space limit.
  auto r = runCommand(mpirun(1) + "/bin/sh -c 'ulimit -v 4000000; exec " + TL_LAUNCH_BIN +
                          " --dataset imagefolder --data-dir " + images +
                          " --model mlp --image-size 4096 --batch 2 --steps 1'",
                      60, work);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_EQ(countOccurrences(r.err, "tl-launch: error:"), 1) << r.err;
  EXPECT_EQ(r.err.find("frame #"), std::string::npos) << "a stack trace:\n" << r.err;
  const size_t begin = r.err.find("tl-launch: error:");
  const std::string line =
      begin == std::string::npos ? "" : r.err.substr(begin, r.err.find('\n', begin) - begin);
  EXPECT_NE(line.find("out of memory building the model"), std::string::npos) << r.err;
  EXPECT_NE(line.find("48.0 GiB"), std::string::npos) << r.err;
}

}  // namespace
