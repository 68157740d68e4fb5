// A job checkpoint's contents must fit together: its SHA-256 is a checksum, so an edited file
// with a new hash reads, and what it says is checked before a job resumes from it.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "common/check.h"
#include "common/files.h"
#include "common/version.h"
#include "elastic/checkpoint/checkpoint_file.h"
#include "elastic/checkpoint/job_checkpoint.h"
#include "est/est_context.h"
#include "tests/elastic/checkpoint_test_util.h"
#include "tests/support/run_command.h"

namespace tl::elastic {
namespace {

using namespace tl::elastic::testing;

constexpr int kWorkers = 2;
constexpr int64_t kStepsDone = 10;

// A checkpoint of a 24-step job with 2 ESTs of batch 8, taken after step 10 of an epoch of 4
// steps: both ESTs at epoch 2, position 16.
JobCheckpoint sampleJob() {
  JobCheckpoint ck;
  ck.config.dataset = "cifar10";
  ck.config.dataDir = "/data/cifar";
  ck.config.batch = 8;
  ck.config.steps = 24;
  ck.config.logicalWorkers = kWorkers;
  ck.placement = "1,1";
  ck.state.stepsDone = kStepsDone;
  ck.state.model.emplace_back("fc.weight", at::ones({2, 3}));
  for (int r = 0; r < kWorkers; ++r) {
    est::EstContext c = est::initialContext(r, 7, at::kCPU);
    c.cursor = {2, 16};
    ck.state.contexts.push_back(c);
  }
  return ck;
}

// Writes the sample, lets `edit` change its manifest, and seals it again with a valid hash.
std::string editedCheckpoint(const std::string& name,
                             const std::function<void(nlohmann::json&)>& edit) {
  const std::string dir = tl::testing::freshDir("consistency_" + name);
  writeJobCheckpoint(dir, sampleJob());
  CheckpointData data = readCheckpoint(checkpointPath(dir));
  edit(data.manifest);
  writeCheckpoint(checkpointPath(dir), data);
  return dir;
}

std::string inconsistency(const std::string& name,
                          const std::function<void(nlohmann::json&)>& edit) {
  const std::string dir = editedCheckpoint(name, edit);
  return inputErrorOf([&] { readJobCheckpoint(dir); });
}

TEST(JobCheckpointConsistency, TheUneditedSampleReads) {
  const std::string dir = editedCheckpoint("unedited", [](nlohmann::json&) {});
  const JobCheckpoint ck = readJobCheckpoint(dir);
  EXPECT_EQ(ck.state.stepsDone, kStepsDone);
  EXPECT_EQ(ck.path, checkpointPath(dir));
  EXPECT_NO_THROW(checkAgainstPlan(ck, /*stepsPerEpoch=*/4, /*totalSteps=*/24));
}

TEST(JobCheckpointConsistency, TheManifestNamesTheTlThatWroteIt) {
  const std::string dir = tl::testing::freshDir("consistency_writer");
  writeJobCheckpoint(dir, sampleJob());
  const nlohmann::json m = readCheckpoint(checkpointPath(dir)).manifest;
  EXPECT_EQ(m.at("tl_version"), tlVersion());
  EXPECT_EQ(m.at("tl_git_commit"), tlGitCommit());
}

TEST(JobCheckpointConsistency, ANewerFormatIsRefusedNamingBothVersions) {
  const std::string message = inconsistency("newer", [](nlohmann::json& m) {
    m["version"] = 2;
    m["tl_version"] = "1.4.0";
  });
  expectContains(message, {"checkpoint.tl' has format version 2", "written by tl 1.4.0",
                           std::string("this tl (") + tlVersion() + ") reads format version 1",
                           "resume it with that tl or a newer one"});
  // A writer that did not say which tl it was (before 0.9.0) is not made up.
  const std::string unnamed = inconsistency("newer_unnamed", [](nlohmann::json& m) {
    m["version"] = 2;
    m.erase("tl_version");
  });
  expectContains(unnamed, {"has format version 2; this tl ("});
  EXPECT_EQ(unnamed.find("written by"), std::string::npos) << unnamed;
}

TEST(JobCheckpointConsistency, StepsPastTheJobsEndAreRefused) {
  const std::string message =
      inconsistency("steps", [](nlohmann::json& m) { m["steps_done"] = 30; });
  expectContains(message,
                 {"checkpoint '", "checkpoint.tl' is inconsistent:", "step 30", "24 steps"});
  const std::string negative =
      inconsistency("negative", [](nlohmann::json& m) { m["steps_done"] = -1; });
  expectContains(negative, {"is inconsistent:", "step -1"});
}

TEST(JobCheckpointConsistency, EstsAtDifferentCursorsAreRefused) {
  const std::string message =
      inconsistency("epochs", [](nlohmann::json& m) { m["ests"][1]["epoch"] = 5; });
  expectContains(message, {"is inconsistent:", "EST 1 is at epoch 5 position 16",
                           "EST 0 at epoch 2 position 16"});
  const std::string negative = inconsistency("position", [](nlohmann::json& m) {
    m["ests"][0]["position"] = -8;
    m["ests"][1]["position"] = -8;
  });
  expectContains(negative, {"is inconsistent:", "position -8"});
}

TEST(JobCheckpointConsistency, DefinitionValuesNoFlagCouldGiveBlameTheCheckpointNotAFlag) {
  const std::string batch =
      inconsistency("batch", [](nlohmann::json& m) { m["job"]["batch"] = 0; });
  expectContains(batch, {"is inconsistent:", "batch 0"});
  EXPECT_EQ(batch.find("--batch"), std::string::npos) << batch;
  const std::string threads =
      inconsistency("threads", [](nlohmann::json& m) { m["job"]["compute_threads"] = 0; });
  expectContains(threads, {"is inconsistent:", "compute threads 0"});
  const std::string model =
      inconsistency("model", [](nlohmann::json& m) { m["job"]["model"]["arch"] = "gpt"; });
  expectContains(model, {"is inconsistent:", "model 'gpt'"});
}

TEST(JobCheckpointConsistency, GeneratorStateOfAnotherSizeIsRefused) {
  const std::string dir = tl::testing::freshDir("consistency_rng");
  writeJobCheckpoint(dir, sampleJob());
  CheckpointData data = readCheckpoint(checkpointPath(dir));
  for (auto& [name, tensor] : data.tensors) {
    if (name == "est/1/cpu_rng") tensor = tensor.narrow(0, 0, 100).clone();
  }
  writeCheckpoint(checkpointPath(dir), data);
  expectContains(inputErrorOf([&] { readJobCheckpoint(dir); }),
                 {"is inconsistent:", "EST 1's generator state", "100 bytes"});
}

// What only the data's plan can tell: where the job ends and where step 10 leaves the cursors.
TEST(JobCheckpointConsistency, CursorsAndStepsAreCheckedAgainstThePlan) {
  const JobCheckpoint ck = readJobCheckpoint(editedCheckpoint("plan", [](nlohmann::json&) {}));
  // An epoch of 5 steps: step 10 is the start of epoch 2, not position 16.
  expectContains(
      inputErrorOf([&] { checkAgainstPlan(ck, 5, 24); }),
      {"is inconsistent:", "after step 10", "epoch 2 position 0", "epoch 2 position 16"});
  // An epoch-driven job that ends at step 8.
  expectContains(inputErrorOf([&] { checkAgainstPlan(ck, 4, 8); }),
                 {"is inconsistent:", "step 10", "8 steps"});
}

}  // namespace
}  // namespace tl::elastic
