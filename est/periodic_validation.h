// Periodic validation (--eval-every S, --eval-batches B, --keep-best): after every S-th step
// the mean loss of B fixed batches of the test split, the same double on every placement
// (train::evaluateBatchLosses), recorded in metrics.jsonl; with --keep-best the model of the
// lowest value so far is kept in <output-dir>/best/. docs/guide/gpt-recipe.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/job_config.h"
#include "runtime/train/metrics.h"

namespace tl::est {

// The model of the lowest validation loss so far, as best.json records it.
struct BestModel {
  int64_t step = 0;
  double valLoss = 0;
};

// <output-dir>/best/ and the files in it.
std::string bestDir(const std::string& outputDir);
std::string bestStateDictPath(const std::string& outputDir);  // model.pt (torch.load-able)
std::string bestRecordPath(const std::string& outputDir);     // best.json: step, val_loss, params_sha256

class PeriodicValidation {
 public:
  // Collective over the job: every batch's loss, in batch order.
  using Score = std::function<std::vector<double>()>;
  // Lead only: writes the model's files (state dict at the path given, TorchScript beside it)
  // and returns its params_sha256.
  using Save = std::function<std::string(const std::string& stateDictPath)>;

  // `firstStep`: where this run starts. A run that continues a job (a resume, a process that
  // joined) takes the best so far from best.json when it is not after `firstStep`; the lead of
  // a job that starts at step 0 removes an earlier job's best/ files.
  PeriodicValidation(const JobConfig& config, int64_t firstStep, bool lead);

  bool due(int64_t stepsDone) const { return config_.evalEvery > 0 && stepsDone % config_.evalEvery == 0; }
  // Collective (Score): validates the model after step `stepsDone`, records it (lead), and with
  // --keep-best writes the model when its loss is below the best so far (lead). Returns the loss.
  double validate(int64_t stepsDone, const Score& score, const Save& save, train::MetricsLog& metrics, bool lead);

  const std::optional<BestModel>& best() const { return best_; }

 private:
  const JobConfig& config_;
  std::optional<BestModel> best_;
};

}  // namespace tl::est
