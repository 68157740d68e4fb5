#include "runtime/job_config.h"

#include <nlohmann/json.hpp>

#include "common/check.h"

namespace tl {

void validate(const JobConfig& c) {
  TL_REQUIRE(c.batch > 0, "--batch: must be at least 1, got ", c.batch);
  TL_REQUIRE(c.workers >= 0, "--workers: must be 0 or more, got ", c.workers);
  TL_REQUIRE(c.prefetch >= 1, "--prefetch: must be at least 1, got ", c.prefetch);
  TL_REQUIRE(c.epochs >= 0 && c.steps >= 0, "--epochs and --steps must not be negative");
  TL_REQUIRE(c.computeThreads >= 1, "--compute-threads: must be at least 1, got ", c.computeThreads);
  TL_REQUIRE(c.device == "cpu" || c.device == "cuda", "--device: unknown device '", c.device,
             "' (expected cpu or cuda)");
  TL_REQUIRE(c.reduction == "fp32" || c.reduction == "exact", "--reduction: unknown mode '",
             c.reduction, "' (expected exact or fp32)");
  TL_REQUIRE(!c.dataDir.empty(), "--data-dir: required (the folder holding the ", c.dataset, " files)");
  TL_REQUIRE(c.schedule.kind == "constant" || c.schedule.kind == "step" || c.schedule.kind == "cosine",
             "--lr-schedule: unknown schedule '", c.schedule.kind, "' (expected constant, step or cosine)");
  TL_REQUIRE(c.schedule.kind != "step" || c.schedule.stepEpochs > 0,
             "--lr-step-epochs: must be positive with --lr-schedule step");
}

nlohmann::json toJson(const JobConfig& c) {
  nlohmann::json j;
  j["model"] = {{"arch", c.model.arch},       {"depth", c.model.depth},
                {"num_classes", c.model.numClasses}, {"in_channels", c.model.inChannels},
                {"image_size", c.model.imageSize},   {"batchnorm", c.model.batchNorm},
                {"dropout", c.model.dropout}};
  j["dataset"] = c.dataset;
  j["data_dir"] = c.dataDir;
  j["augment"] = c.augment;
  j["drop_last_batch"] = c.dropLastBatch;
  j["batch"] = c.batch;
  j["workers"] = c.workers;
  j["epochs"] = c.epochs;
  j["steps"] = c.steps;
  const auto& o = c.optimizer;
  j["optimizer"] = {{"name", o.name},       {"lr", o.lr},       {"momentum", o.momentum},
                    {"weight_decay", o.weightDecay}, {"dampening", o.dampening},
                    {"beta1", o.beta1},     {"beta2", o.beta2}, {"eps", o.eps},
                    {"rho", o.rho}};
  j["lr_schedule"] = {{"kind", c.schedule.kind},          {"step_epochs", c.schedule.stepEpochs},
                      {"gamma", c.schedule.gamma},        {"warmup_epochs", c.schedule.warmupEpochs},
                      {"min_lr", c.schedule.minLr}};
  j["seed"] = c.seed;
  j["device"] = c.device;
  j["compute_threads"] = c.computeThreads;
  j["reduction"] = c.reduction;
  j["eval"] = c.eval;
  return j;
}

}  // namespace tl
