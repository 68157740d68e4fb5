#include "runtime/job_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "common/check.h"
#include "runtime/optim/decay_groups.h"

namespace tl {

Reduction parseReduction(const std::string& text) {
  if (text == "exact") return Reduction::Exact;
  if (text == "fp32") return Reduction::Fp32;
  inputError("--reduction: unknown mode '", text, "' (expected exact or fp32)");
}

DeviceSpec DeviceSpec::parse(const std::string& text) {
  DeviceSpec d;
  if (text == "cpu") return d;
  if (text == "cuda") {
    d.kind = Kind::Cuda;
    return d;
  }
  TL_REQUIRE(text.rfind("sim:", 0) == 0, "--device: unknown device '", text, "' (expected cpu, cuda or sim:RATE)");
  const std::string rate = text.substr(4);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(rate.c_str(), &end);
  TL_REQUIRE(!rate.empty() && *end == '\0' && errno == 0 && v > 0 && v < 1e12, "--device ", text,
             ": RATE must be a positive number of images per second, e.g. sim:2000");
  d.kind = Kind::Sim;
  d.simRate = v;
  return d;
}

std::string DeviceSpec::toString() const {
  switch (kind) {
    case Kind::Cpu:
      return "cpu";
    case Kind::Cuda:
      return "cuda";
    case Kind::Sim: {
      char text[32];  // shortest text that reads back exactly: sim:2000, sim:0.5
      auto end = std::to_chars(text, text + sizeof text, simRate).ptr;
      return "sim:" + std::string(text, end);
    }
  }
  return "cpu";
}

models::ModelConfig defaultJobModel() {
  models::ModelConfig m;
  m.arch = "cnn";
  return m;
}

optim::OptimizerOptions defaultJobOptimizer() {
  optim::OptimizerOptions o;
  o.name = "sgd";
  o.lr = 0.05;
  o.momentum = 0.9;
  return o;
}

std::chrono::milliseconds collectiveTimeout(const RunSettings& settings) {
  return std::chrono::milliseconds(std::max<int64_t>(1, std::llround(settings.collectiveTimeoutSeconds * 1000)));
}

void validate(const JobConfig& c) {
  TL_REQUIRE(c.batch > 0, "--batch: must be at least 1, got ", c.batch);
  TL_REQUIRE(c.workers >= 0, "--workers: must be 0 or more, got ", c.workers);
  TL_REQUIRE(c.prefetch >= 1, "--prefetch: must be at least 1, got ", c.prefetch);
  TL_REQUIRE(c.epochs >= 0 && c.steps >= 0, "--epochs and --steps must not be negative");
  TL_REQUIRE(c.logicalWorkers >= 0, "--logical-workers: must be at least 1, got ", c.logicalWorkers);
  TL_REQUIRE(c.computeThreads >= 1, "--compute-threads: must be at least 1, got ", c.computeThreads);
  TL_REQUIRE(c.collectiveTimeoutSeconds > 0, "--collective-timeout: must be positive, got ",
             c.collectiveTimeoutSeconds);
  TL_REQUIRE(!c.dataDir.empty(), "--data-dir: required (the folder holding the ", c.dataset, " files)");
  TL_REQUIRE(c.imageSize >= 0 && c.imageSize <= 4096, "--image-size: must be 1 to 4096, got ",
             c.imageSize);
  TL_REQUIRE(c.dataset == "imagefolder" || (c.imageSize == 0 && !c.skipCorrupt),
             "--image-size and --skip-corrupt apply to --dataset imagefolder only");
  TL_REQUIRE(c.cacheMb < 0 || c.dataset == "imagefolder",
             "--cache-mb applies to --dataset imagefolder only (", c.dataset,
             " is decoded into memory when opened)");
  TL_REQUIRE(
      c.emulateStorageMbps <= 0 || c.dataset == "imagefolder",
      "--emulate-storage-mbps applies to --dataset imagefolder only (", c.dataset,
      " is decoded into memory when opened, so nothing is read from storage while training)");
  // Array datasets.
  TL_REQUIRE(c.dataset == "tokens" || (c.seqLen == 0 && c.tokenDtype.empty()),
             "--seq-len and --token-dtype apply to --dataset tokens only");
  // (--seq-len's presence is checked where the tokens are opened: data::openArrayDataset.)
  TL_REQUIRE(c.tokenDtype.empty() || c.tokenDtype == "uint16" || c.tokenDtype == "uint32",
             "--token-dtype: '", c.tokenDtype, "' is not uint16 or uint32");
  const auto& s = c.schedule;
  TL_REQUIRE(s.kind == "constant" || s.kind == "step" || s.kind == "cosine" || s.kind == "linear",
             "--lr-schedule: unknown schedule '", s.kind, "' (expected constant, step, cosine or linear)");
  TL_REQUIRE(s.kind != "step" || s.stepEpochs > 0, "--lr-step-epochs: must be positive with --lr-schedule step");
  if (s.inSteps()) {
    TL_REQUIRE(s.kind != "step", "--lr-schedule step counts epochs (--lr-step-epochs); --warmup-steps and "
               "--decay-steps go with --lr-schedule constant, cosine or linear");
    TL_REQUIRE(s.warmupEpochs == 0, "--warmup-epochs ", s.warmupEpochs, " and a schedule in steps (",
               s.kind == "linear" ? "--lr-schedule linear" : "--warmup-steps or --decay-steps",
               "): give the warm-up in steps (--warmup-steps) or in epochs, not both");
    TL_REQUIRE(s.decaySteps < 0 || s.kind != "constant",
               "--decay-steps: --lr-schedule constant does not decay (use cosine or linear)");
    TL_REQUIRE(s.decaySteps < 0 || s.decaySteps > std::max<int64_t>(0, s.warmupSteps),
               "--decay-steps ", s.decaySteps, ": must come after the warm-up (more than --warmup-steps, ",
               std::max<int64_t>(0, s.warmupSteps), ")");
  }
  if (!c.noDecay.empty()) optim::checkNoDecayPattern(c.noDecay);
  TL_REQUIRE(c.microBatches >= 1, "--micro-batches: must be at least 1, got ", c.microBatches);
  TL_REQUIRE(c.batch % c.microBatches == 0, "--micro-batches ", c.microBatches, ": --batch ", c.batch,
             " is not divisible by it (each EST's batch is cut into equal pieces)");
  TL_REQUIRE(c.evalEvery >= 0, "--eval-every: must be at least 1, got ", c.evalEvery);
  TL_REQUIRE(c.evalBatches >= 0, "--eval-batches: must be at least 1, got ", c.evalBatches);
  TL_REQUIRE(c.evalBatches == 0 || c.evalEvery > 0,
             "--eval-batches: needs --eval-every (the steps between validations)");
  TL_REQUIRE(!c.keepBest || c.evalEvery > 0,
             "--keep-best: needs --eval-every (the best model is the one of the lowest validation loss)");
  TL_REQUIRE(!c.keepBest || !c.outputDir.empty(),
             "--keep-best: needs --output-dir (the best model goes to <output-dir>/best/)");
  TL_REQUIRE(c.weightDecayOn == "all" || c.weightDecayOn == "matrices", "--weight-decay-on: unknown value '",
             c.weightDecayOn, "' (expected all or matrices)");
}

nlohmann::json toJson(const JobDefinition& c) {
  nlohmann::json j;
  j["model"] = {{"arch", c.model.arch},       {"depth", c.model.depth},
                {"num_classes", c.model.numClasses}, {"in_channels", c.model.inChannels},
                {"image_size", c.model.imageSize},   {"batchnorm", c.model.batchNorm},
                {"dropout", c.model.dropout},
                // --model-file, --loss, --model-returns (absent from checkpoints before them)
                {"file", c.model.file}, {"file_sha256", c.model.fileSha256},
                {"loss", c.model.loss}, {"returns_loss", c.model.returnsLoss}};
  j["dataset"] = c.dataset;
  j["augment"] = c.augment;
  j["image_size"] = c.imageSize;
  j["skip_corrupt"] = c.skipCorrupt;
  j["drop_last_batch"] = c.dropLastBatch;
  j["seq_len"] = c.seqLen;  // array datasets
  j["token_dtype"] = c.tokenDtype;
  j["batch"] = c.batch;
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
  if (c.schedule.warmupSteps >= 0) j["lr_schedule"]["warmup_steps"] = c.schedule.warmupSteps;  // absent: not given
  if (c.schedule.decaySteps >= 0) j["lr_schedule"]["decay_steps"] = c.schedule.decaySteps;
  if (c.clipGradNorm > 0) j["clip_grad_norm"] = c.clipGradNorm;  // absent: off (and older jobs)
  if (c.weightDecayOn != "all") j["weight_decay_on"] = c.weightDecayOn;  // absent: all (and older jobs)
  if (!c.noDecay.empty()) j["no_decay"] = c.noDecay;
  if (c.microBatches != 1) j["micro_batches"] = c.microBatches;  // absent: 1 (and older jobs)
  j["seed"] = c.seed;
  j["logical_workers"] = c.logicalWorkers;
  j["compute_threads"] = c.computeThreads;
  j["reduction"] = toString(c.reduction);
  return j;
}

nlohmann::json toJson(const RunSettings& s) {
  nlohmann::json j;
  j["data_dir"] = s.dataDir;
  j["workers"] = s.workers;
  j["auto_workers"] = s.autoWorkers;
  j["prefetch"] = s.prefetch;
  j["cache_mb"] = s.cacheMb;
  j["emulate_storage_mbps"] = s.emulateStorageMbps;
  j["device"] = s.device.toString();
  j["bucket_bytes"] = s.bucketBytes;
  j["overlap"] = s.overlap;
  j["output_dir"] = s.outputDir;
  j["eval"] = s.eval;
  if (s.evalEvery > 0) {  // absent: off (and older jobs)
    j["eval_every"] = s.evalEvery;
    j["eval_batches"] = s.evalBatches;
    j["keep_best"] = s.keepBest;
  }
  j["log_every"] = s.logEvery;
  j["collective_timeout_s"] = s.collectiveTimeoutSeconds;
  return j;
}

nlohmann::json toJson(const JobConfig& c) {
  nlohmann::json j = toJson(c.definition());
  j.update(toJson(c.settings()));
  return j;
}

namespace {

// Runs `read`, turning JSON errors into an InputError that names what was being read.
template <typename Read>
auto readJson(const char* what, Read read) {
  try {
    return read();
  } catch (const nlohmann::json::exception& e) {
    inputError(what, " is incomplete or malformed: ", e.what());
  }
}

}  // namespace

JobDefinition jobDefinitionFromJson(const nlohmann::json& j) {
  return readJson("job definition", [&] {
    JobDefinition c;
    const auto& m = j.at("model");
    c.model.arch = m.at("arch");
    c.model.depth = m.at("depth");
    c.model.numClasses = m.at("num_classes");
    c.model.inChannels = m.at("in_channels");
    c.model.imageSize = m.at("image_size");
    c.model.batchNorm = m.at("batchnorm");
    c.model.dropout = m.at("dropout");
    c.model.file = m.value("file", "");
    c.model.fileSha256 = m.value("file_sha256", "");
    c.model.loss = m.value("loss", models::ModelConfig{}.loss);
    c.model.returnsLoss = m.value("returns_loss", false);
    c.dataset = j.at("dataset");
    c.augment = j.at("augment");
    c.imageSize = j.value("image_size", 0);
    c.skipCorrupt = j.value("skip_corrupt", false);
    c.dropLastBatch = j.at("drop_last_batch");
    c.seqLen = j.value("seq_len", int64_t(0));  // array datasets
    c.tokenDtype = j.value("token_dtype", std::string());
    c.batch = j.at("batch");
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
    c.schedule.warmupSteps = s.value("warmup_steps", int64_t(-1));
    c.schedule.decaySteps = s.value("decay_steps", int64_t(-1));
    c.clipGradNorm = j.value("clip_grad_norm", 0.0);
    c.weightDecayOn = j.value("weight_decay_on", std::string("all"));
    c.noDecay = j.value("no_decay", std::string());
    c.microBatches = j.value("micro_batches", int64_t(1));
    c.seed = j.at("seed");
    c.logicalWorkers = j.value("logical_workers", 0);  // checkpoints before 0.2 keep it outside
    c.computeThreads = j.at("compute_threads");
    c.reduction = parseReduction(j.at("reduction"));
    return c;
  });
}

RunSettings runSettingsFromJson(const nlohmann::json& j) {
  return readJson("run settings", [&] {
    RunSettings s;
    s.dataDir = j.at("data_dir");
    s.workers = j.at("workers");
    s.autoWorkers = j.value("auto_workers", false);
    s.prefetch = j.at("prefetch");
    s.cacheMb = j.value("cache_mb", -1.0);  // checkpoints before --cache-mb have none
    s.emulateStorageMbps = j.value("emulate_storage_mbps", 0.0);
    s.device = DeviceSpec::parse(j.at("device"));
    s.bucketBytes = j.at("bucket_bytes");
    s.overlap = j.value("overlap", RunSettings{}.overlap);  // older checkpoints have none
    s.outputDir = j.at("output_dir");
    s.eval = j.at("eval");
    s.evalEvery = j.value("eval_every", int64_t(0));
    s.evalBatches = j.value("eval_batches", int64_t(0));
    s.keepBest = j.value("keep_best", false);
    s.logEvery = j.at("log_every");
    s.collectiveTimeoutSeconds = j.value("collective_timeout_s", RunSettings{}.collectiveTimeoutSeconds);
    return s;
  });
}

JobConfig jobConfigFromJson(const nlohmann::json& j) {
  return JobConfig(jobDefinitionFromJson(j), runSettingsFromJson(j));
}

}  // namespace tl
