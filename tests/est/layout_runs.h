// Test support: one rank's share of a small job (N = 4 ESTs of the CNN, with BatchNorm and
// dropout, on synthetic CIFAR data) under a schedule of layout changes, for the in-process
// (in-memory communicator) and the multi-process (MPI) executor tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataload/synthetic.h"
#include "est/executor_builder.h"
#include "tests/support/run_command.h"

namespace tl::est::testing {

constexpr int64_t kLayoutTestSteps = 6;

// The synthetic CIFAR-10 folder TL_TEST_TMP/NAME (`trainImages`, 8 test images, `seed`), made
// afresh when `write` (in an MPI test: rank 0, followed by a barrier); its path either way.
inline std::string syntheticCifar(const std::string& name, int64_t trainImages, uint64_t seed, bool write = true) {
  const char* base = std::getenv("TL_TEST_TMP");
  const std::string dir = std::string(base ? base : "/tmp/tl-test") + "/" + name;
  if (!write) return dir;
  tl::testing::freshDir(name);
  data::SyntheticOptions so;
  so.trainImages = trainImages;
  so.testImages = 8;
  so.seed = seed;
  data::writeSyntheticCifar10(so, dir);
  return dir;
}

// 96 images: 24 per EST, 3 batches of 8, so the steps cross an epoch.
inline JobConfig layoutTestJob(const std::string& dataDir, const std::string& reduction) {
  JobConfig c;
  c.model.arch = "cnn";
  c.dataset = "cifar10";
  c.dataDir = dataDir;
  c.batch = 8;
  c.steps = kLayoutTestSteps;
  c.workers = 1;
  c.seed = 11;
  c.reduction = parseReduction(reduction);
  c.logEvery = 0;
  c.optimizer.momentum = 0.9;  // optimizer state a joining member must receive
  return c;
}

// A change of layout after `afterSteps` steps: the new ESTs of each current member (0: holds
// none but takes part), over the same communicator, or over a fresh one split from it that keeps
// only the members holding ESTs (the others leave the job).
struct Change {
  int64_t afterSteps;
  std::vector<int> counts;
  enum Comm { SameMembers, FreshSplit } comm = SameMembers;
};

// Applies the schedule from StepObserver::afterStep, on every member alike.
class Schedule final : public StepObserver {
 public:
  explicit Schedule(std::vector<Change> changes) : changes_(std::move(changes)) {}
  StepAction afterStep(int64_t stepsDone, EstExecutor& executor) override {
    for (const Change& c : changes_) {
      if (c.afterSteps != stepsDone) continue;
      comm::Communicator& current = executor.comm();
      if (c.comm == Change::SameMembers) {
        executor.changeLayout(Placement::withIdleMembers(c.counts), &current, &current);
        continue;
      }
      std::vector<int> kept;
      for (int n : c.counts) {
        if (n > 0) kept.push_back(n);
      }
      const bool stays = c.counts.at(size_t(current.rank())) > 0;
      owned_.push_back(current.split(stays ? 0 : -1, current.rank()));
      comm::Communicator* next = owned_.back().get();
      executor.changeLayout(Placement::withIdleMembers(kept), next, next);
    }
    return StepAction::Continue;
  }

 private:
  std::vector<Change> changes_;
  std::vector<std::unique_ptr<comm::Communicator>> owned_;
};

struct RankOutcome {
  std::string sha;     // params_sha256 when this member is still in the job at the end
  int64_t steps = -1;  // steps done when run() returned
  bool inJob = false;
};

// This rank's part of the job: `counts` ESTs per member of `world`, then `changes`.
inline RankOutcome trainOnRank(comm::Communicator& world, const JobConfig& job, const std::vector<int>& counts,
                               const std::vector<Change>& changes = {}) {
  Schedule schedule(changes);  // owns communicators the executor uses: declared first
  auto executor = ExecutorBuilder(job).layout(Placement::withIdleMembers(counts), world, world).build();
  train::MetricsLog metrics;
  const train::TrainResult r = executor->run(metrics, &schedule);
  RankOutcome out;
  out.steps = r.steps;
  out.inJob = executor->inJob();
  if (out.inJob) out.sha = r.paramsSha256;
  return out;
}

}  // namespace tl::est::testing
