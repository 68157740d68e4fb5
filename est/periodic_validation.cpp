#include "est/periodic_validation.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/files.h"
#include "runtime/train/evaluate.h"

namespace tl::est {

std::string bestDir(const std::string& outputDir) { return joinPath(outputDir, "best"); }
std::string bestStateDictPath(const std::string& outputDir) { return joinPath(bestDir(outputDir), "model.pt"); }
std::string bestRecordPath(const std::string& outputDir) { return joinPath(bestDir(outputDir), "best.json"); }

PeriodicValidation::PeriodicValidation(const JobConfig& config, int64_t firstStep, bool lead) : config_(config) {
  if (config.evalEvery <= 0 || !config.keepBest) return;
  const std::string record = bestRecordPath(config.outputDir);
  if (firstStep == 0) {
    // A new job: what best/ holds is an earlier job's (its files, not the folder, which the
    // user may have put more in).
    if (lead) {
      std::error_code ec;
      for (const char* name : {"model.pt", "model.torchscript.pt", "best.json"})
        std::filesystem::remove(joinPath(bestDir(config.outputDir), name), ec);
    }
    return;
  }
  if (!fileExists(record)) return;
  try {
    const nlohmann::json j = nlohmann::json::parse(readFile(record));
    BestModel b{j.at("step").get<int64_t>(), j.at("val_loss").get<double>()};
    if (b.step <= firstStep) best_ = b;  // a later one is from a run this job went back from
  } catch (const nlohmann::json::exception& e) {
    spdlog::warn("--keep-best: ignoring {}: {}", record, e.what());
  }
}

double PeriodicValidation::validate(int64_t stepsDone, const Score& score, const Save& save,
                                    train::MetricsLog& metrics, bool lead) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<double> losses = score();
  const double valLoss = train::meanInOrder(losses);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool tokens = config_.model.returnsLoss && config_.dataset == "tokens";
  // Every process holds the same value, so every one agrees on what is best (a later lead too).
  const bool better = config_.keepBest && std::isfinite(valLoss) && (!best_ || valLoss < best_->valLoss);
  if (better) best_ = BestModel{stepsDone, valLoss};
  if (!lead) return valLoss;
  nlohmann::json r = {{"type", "eval"}, {"step", stepsDone}, {"val_loss", valLoss},
                      {"batches", int64_t(losses.size())}, {"samples", int64_t(losses.size()) * config_.batch}};
  if (tokens) r["val_ppl"] = std::exp(valLoss);
  r["eval_s"] = seconds;
  if (better) {
    const std::string path = bestStateDictPath(config_.outputDir);
    ensureWritableDir(bestDir(config_.outputDir), "--keep-best");
    const std::string sha = save(path);
    writeFileAtomic(bestRecordPath(config_.outputDir),
                    nlohmann::json{{"step", stepsDone}, {"val_loss", valLoss}, {"params_sha256", sha}}.dump(2) + "\n");
    r["best"] = true;
  }
  r["time"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  metrics.write(r);
  spdlog::info("step {} validation loss {:.4f}{} over {} batches{}", stepsDone, valLoss,
               tokens ? fmt::format(" (perplexity {:.3f})", std::exp(valLoss)) : std::string(), losses.size(),
               better ? ", the best so far: written to " + bestDir(config_.outputDir) : std::string());
  return valLoss;
}

}  // namespace tl::est
