// The definition of a training job, independent of how it is launched or placed.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "runtime/models/model.h"
#include "runtime/optim/optimizer.h"

namespace tl {

struct LrScheduleConfig {
  std::string kind = "constant";  // constant | step | cosine
  double stepEpochs = 0;          // step: decay every this many epochs
  double gamma = 0.1;             // step: decay factor
  double warmupEpochs = 0;        // linear warm-up
  double minLr = 0;               // cosine floor
};

struct JobConfig {
  models::ModelConfig model;

  std::string dataset = "cifar10";  // cifar10 | mnist | fashion-mnist | imagefolder
  std::string dataDir;
  bool augment = true;
  int imageSize = 0;         // imagefolder: side of the crops fed to the model; 0 = 224
  bool skipCorrupt = false;  // imagefolder: replace undecodable files instead of failing
  bool dropLastBatch = false;  // keep the short last batch of an epoch, as DataLoader does

  int64_t batch = 32;        // per worker
  int workers = 2;           // loader threads per process (0: load on the training thread)
  bool autoWorkers = false;  // let the node coordinator size the pool (workers = start size)
  int prefetch = 2;
  int64_t epochs = 0;        // exactly one of epochs / steps drives the length
  int64_t steps = 0;

  optim::OptimizerOptions optimizer;
  LrScheduleConfig schedule;

  uint64_t seed = 0;
  std::string device = "cpu";  // cpu | cuda | sim:RATE (a stand-in device consuming RATE images/s)
  int deviceIndex = 0;         // cuda device of this process (set by the launcher)
  int computeThreads = 1;      // intra-op threads per worker: part of the job, not the machine

  std::string reduction = "fp32";  // gradient reduction mode
  int64_t bucketBytes = 25 << 20;

  std::string outputDir;       // metrics.jsonl, summary.json
  bool eval = false;           // test-set evaluation after every epoch
  std::string saveModel;       // write the final (or, with --steps 0, initial) state dict here
  int64_t logEvery = 10;       // progress line every this many steps
};

// Checks a config for consistency; InputError naming the offending setting.
void validate(const JobConfig& config);

// The crop side an imagefolder job feeds its model: imageSize, or 224 when it is 0.
inline int imageFolderSize(const JobConfig& config) {
  return config.imageSize > 0 ? config.imageSize : 224;
}

// For --device sim:RATE, RATE in images/s; 0 for real devices. InputError on a bad RATE.
double simulatedDeviceRate(const std::string& device);

nlohmann::json toJson(const JobConfig& config);
// Inverse of toJson (for checkpoints); InputError naming a missing or mistyped field.
JobConfig jobConfigFromJson(const nlohmann::json& json);

}  // namespace tl
