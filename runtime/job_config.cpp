#include "runtime/job_config.h"

#include <nlohmann/json.hpp>

#include <cstdlib>

#include "common/check.h"

namespace tl {

void validate(const JobConfig& c) {
  TL_REQUIRE(c.batch > 0, "--batch: must be at least 1, got ", c.batch);
  TL_REQUIRE(c.workers >= 0, "--workers: must be 0 or more, got ", c.workers);
  TL_REQUIRE(c.prefetch >= 1, "--prefetch: must be at least 1, got ", c.prefetch);
  TL_REQUIRE(c.epochs >= 0 && c.steps >= 0, "--epochs and --steps must not be negative");
  TL_REQUIRE(c.computeThreads >= 1, "--compute-threads: must be at least 1, got ", c.computeThreads);
  TL_REQUIRE(c.device == "cpu" || c.device == "cuda" || simulatedDeviceRate(c.device) > 0,
             "--device: unknown device '", c.device, "' (expected cpu, cuda or sim:RATE)");
  TL_REQUIRE(c.reduction == "fp32" || c.reduction == "exact", "--reduction: unknown mode '",
             c.reduction, "' (expected exact or fp32)");
  TL_REQUIRE(!c.dataDir.empty(), "--data-dir: required (the folder holding the ", c.dataset, " files)");
  TL_REQUIRE(c.imageSize >= 0 && c.imageSize <= 4096, "--image-size: must be 1 to 4096, got ",
             c.imageSize);
  TL_REQUIRE(c.dataset == "imagefolder" || (c.imageSize == 0 && !c.skipCorrupt),
             "--image-size and --skip-corrupt apply to --dataset imagefolder only");
  TL_REQUIRE(c.schedule.kind == "constant" || c.schedule.kind == "step" || c.schedule.kind == "cosine",
             "--lr-schedule: unknown schedule '", c.schedule.kind, "' (expected constant, step or cosine)");
  TL_REQUIRE(c.schedule.kind != "step" || c.schedule.stepEpochs > 0,
             "--lr-step-epochs: must be positive with --lr-schedule step");
}

double simulatedDeviceRate(const std::string& device) {
  if (device.rfind("sim:", 0) != 0) return 0;
  const std::string rate = device.substr(4);
  char* end = nullptr;
  double v = std::strtod(rate.c_str(), &end);
  TL_REQUIRE(!rate.empty() && *end == '\0' && v > 0 && v < 1e12, "--device ", device,
             ": RATE must be a positive number of images per second, e.g. sim:2000");
  return v;
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
  j["image_size"] = c.imageSize;
  j["skip_corrupt"] = c.skipCorrupt;
  j["drop_last_batch"] = c.dropLastBatch;
  j["batch"] = c.batch;
  j["workers"] = c.workers;
  j["auto_workers"] = c.autoWorkers;
  j["prefetch"] = c.prefetch;
  j["epochs"] = c.epochs;
  j["steps"] = c.steps;
  const auto& o = c.optimizer;
  j["optimizer"] = {{"name", o.name},         {"lr", o.lr},
                    {"momentum", o.momentum}, {"dampening", o.dampening},
                    {"weight_decay", o.weightDecay}, {"beta1", o.beta1},
                    {"beta2", o.beta2},       {"eps", o.eps},
                    {"rho", o.rho},           {"lr_decay", o.lrDecay},
                    {"initial_accumulator", o.initialAccumulator}};
  j["lr_schedule"] = {{"kind", c.schedule.kind},          {"step_epochs", c.schedule.stepEpochs},
                      {"gamma", c.schedule.gamma},        {"warmup_epochs", c.schedule.warmupEpochs},
                      {"min_lr", c.schedule.minLr}};
  j["seed"] = c.seed;
  j["device"] = c.device;
  j["compute_threads"] = c.computeThreads;
  j["reduction"] = c.reduction;
  j["bucket_bytes"] = c.bucketBytes;
  j["output_dir"] = c.outputDir;
  j["eval"] = c.eval;
  j["log_every"] = c.logEvery;
  return j;
}

JobConfig jobConfigFromJson(const nlohmann::json& j) {
  try {
    JobConfig c;
    const auto& m = j.at("model");
    c.model.arch = m.at("arch");
    c.model.depth = m.at("depth");
    c.model.numClasses = m.at("num_classes");
    c.model.inChannels = m.at("in_channels");
    c.model.imageSize = m.at("image_size");
    c.model.batchNorm = m.at("batchnorm");
    c.model.dropout = m.at("dropout");
    c.dataset = j.at("dataset");
    c.dataDir = j.at("data_dir");
    c.augment = j.at("augment");
    c.imageSize = j.value("image_size", 0);
    c.skipCorrupt = j.value("skip_corrupt", false);
    c.dropLastBatch = j.at("drop_last_batch");
    c.batch = j.at("batch");
    c.workers = j.at("workers");
    c.autoWorkers = j.value("auto_workers", false);
    c.prefetch = j.at("prefetch");
    c.epochs = j.at("epochs");
    c.steps = j.at("steps");
    const auto& o = j.at("optimizer");
    c.optimizer.name = o.at("name");
    c.optimizer.lr = o.at("lr");
    c.optimizer.momentum = o.at("momentum");
    c.optimizer.dampening = o.at("dampening");
    c.optimizer.weightDecay = o.at("weight_decay");
    c.optimizer.beta1 = o.at("beta1");
    c.optimizer.beta2 = o.at("beta2");
    c.optimizer.eps = o.at("eps");
    c.optimizer.rho = o.at("rho");
    c.optimizer.lrDecay = o.at("lr_decay");
    c.optimizer.initialAccumulator = o.at("initial_accumulator");
    const auto& s = j.at("lr_schedule");
    c.schedule.kind = s.at("kind");
    c.schedule.stepEpochs = s.at("step_epochs");
    c.schedule.gamma = s.at("gamma");
    c.schedule.warmupEpochs = s.at("warmup_epochs");
    c.schedule.minLr = s.at("min_lr");
    c.seed = j.at("seed");
    c.device = j.at("device");
    c.computeThreads = j.at("compute_threads");
    c.reduction = j.at("reduction");
    c.bucketBytes = j.at("bucket_bytes");
    c.outputDir = j.at("output_dir");
    c.eval = j.at("eval");
    c.logEvery = j.at("log_every");
    return c;
  } catch (const nlohmann::json::exception& e) {
    inputError("job definition is incomplete or malformed: ", e.what());
  }
}

}  // namespace tl
