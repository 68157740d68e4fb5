// A training job = its definition (what decides the result) + the settings of one run of it.
//
// JobDefinition is everything that determines params_sha256: model, dataset identity and
// augmentation, seed, N logical workers, batch, optimizer and schedule, reduction, compute
// threads, length. A checkpoint stores it; a resume (and, next, an in-place rescale) keeps it.
// RunSettings may change at every resume: where the data and outputs are, loader threads,
// device, logging. Each field has exactly one default: the initialiser here. Which command-line
// flag sets which field, and whether it is defining, is declared once in launcher/job_flags.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "runtime/models/model.h"
#include "runtime/optim/optimizer.h"
#include "runtime/reduce/reduction.h"

namespace tl {

// "exact" | "fp32"; InputError naming --reduction otherwise.
Reduction parseReduction(const std::string& text);

// The device each process computes on: the CPU, its GPU, or a stand-in that consumes RATE
// images/s by waiting (to study loader tuning on machines without GPUs).
struct DeviceSpec {
  enum class Kind { Cpu, Cuda, Sim };
  Kind kind = Kind::Cpu;
  double simRate = 0;  // Sim only: images per second

  // "cpu" | "cuda" | "sim:RATE"; InputError naming --device otherwise.
  static DeviceSpec parse(const std::string& text);
  std::string toString() const;
  bool isCuda() const { return kind == Kind::Cuda; }
  bool isSimulated() const { return kind == Kind::Sim; }
  bool operator==(const DeviceSpec& o) const { return kind == o.kind && simRate == o.simRate; }
};

struct LrScheduleConfig {
  std::string kind = "constant";  // constant | step | cosine | linear
  double stepEpochs = 0;          // step: decay every this many epochs
  double gamma = 0.1;             // step: decay factor
  double warmupEpochs = 0;        // linear warm-up
  double minLr = 0;               // cosine (and linear) floor
  // In steps (nanoGPT's get_lr, optim/lr_schedule.h), when either is >= 0 or kind is linear:
  // -1 is "not given". decaySteps -1 resolves to the job's last step index (T - 1) when the
  // executor is built, so a checkpoint and the summary carry the value the job used.
  int64_t warmupSteps = -1;
  int64_t decaySteps = -1;
  bool inSteps() const { return warmupSteps >= 0 || decaySteps >= 0 || kind == "linear"; }
};

// The model and optimizer a job gets unless told otherwise: the small CNN; SGD, lr 0.05,
// momentum 0.9.
models::ModelConfig defaultJobModel();
optim::OptimizerOptions defaultJobOptimizer();

struct JobDefinition {
  // arch, depth, batch norm, dropout; in_channels, num_classes and image_size follow from the
  // dataset (train::adaptModelToData).
  models::ModelConfig model = defaultJobModel();
  std::string dataset = "fashion-mnist";  // cifar10 | mnist | fashion-mnist | imagefolder | tensors | tokens
  bool augment = true;         // the dataset's training augmentation (data_setup.h says which)
  int imageSize = 0;           // imagefolder: side of the crops fed to the model; 0 = 224
  bool skipCorrupt = false;    // imagefolder: replace undecodable files instead of failing
  bool dropLastBatch = false;  // keep the short last batch of an epoch, as DataLoader does
  // Array datasets (dataload/array_dataset.h), tokens only: tokens per sample, and the width
  // of raw .bin token files ("uint16" | "uint32"; empty: read .npy files).
  int64_t seqLen = 0;
  std::string tokenDtype;

  int64_t batch = 32;          // per logical worker
  int64_t epochs = 0;          // exactly one of epochs / steps drives the length
  int64_t steps = 0;
  optim::OptimizerOptions optimizer = defaultJobOptimizer();
  LrScheduleConfig schedule;
  // > 0: the reduced gradient's global L2 norm is clipped to this before each update
  // (torch.nn.utils.clip_grad_norm_); 0: no clipping.
  double clipGradNorm = 0;
  // Which parameters weight decay applies to: "all", or "matrices" (those with 2 or more
  // dimensions: nanoGPT's and llm.c's rule); and, if not empty, none whose name (as in
  // named_parameters) an ECMAScript regular expression finds a match in (--no-decay).
  std::string weightDecayOn = "all";
  std::string noDecay;
  // > 1: each EST computes its batch in this many pieces and accumulates loss / K gradients
  // (PyTorch's accumulation with no_sync). It defines the job: K = 2 is not K = 1 bit for bit.
  int64_t microBatches = 1;

  uint64_t seed = 0;
  int logicalWorkers = 0;      // N; 0 until the launcher resolves it (one per process)
  int computeThreads = 1;      // intra-op threads per worker: part of the job, not the machine
  Reduction reduction = Reduction::Exact;
};

struct RunSettings {
  std::string dataDir;         // the dataset's folder
  int workers = 2;             // loader threads per process (0: load on the training thread)
  bool autoWorkers = false;    // let the node coordinator size the pool (workers = start size)
  int prefetch = 2;            // batches prepared ahead per loader thread
  double cacheMb = -1;         // imagefolder: MiB of encoded training samples cached (< 0: none)
  // imagefolder: storage reads take at least bytes / (R * 10^6) s, sleeping (0: real speed).
  double emulateStorageMbps = 0;
  DeviceSpec device;
  int deviceIndex = 0;         // cuda device of this process (set by the launcher)
  int64_t bucketBytes = 25 << 20;
  bool overlap = true;         // reduce gradient buckets while backward still runs (same bits)

  std::string outputDir;       // metrics.jsonl, summary.json
  bool eval = false;           // test-set evaluation after every epoch
  // Periodic validation (--eval-every, docs/guide/gpt-recipe.md): after every
  // evalEvery-th step the mean loss of the test split's first evalBatches batches of `batch`
  // samples, the same value on every placement; 0: off. evalBatches 0: the default
  // (kDefaultEvalBatches, or fewer when the split holds fewer). keepBest: also write the model
  // of the lowest validation loss to <outputDir>/best/.
  int64_t evalEvery = 0;
  int64_t evalBatches = 0;
  bool keepBest = false;
  std::string saveModel;       // write the final (or, with --steps 0, initial) state dict here
  // --trace-steps: steps traceFirst..traceLast (from 1; 0: none) recorded by libtorch's profiler
  // into <outputDir>/trace/rank-R.json (runtime/train/step_trace.h).
  int64_t traceFirst = 0;
  int64_t traceLast = 0;
  int64_t logEvery = 10;       // progress line every this many steps
  // A collective not completed by every process within this many seconds ends the job, naming
  // the processes that did not join it (a stopped or hung rank).
  double collectiveTimeoutSeconds = 600;
};

// --eval-batches when not given: nanoGPT evaluates 200 batches, a smaller default for small jobs.
constexpr int64_t kDefaultEvalBatches = 20;

// collectiveTimeoutSeconds as a duration, rounded to milliseconds (at least 1).
std::chrono::milliseconds collectiveTimeout(const RunSettings& settings);

// What an executor runs: one definition with the settings of this run. The two parts keep
// their own types (definition(), settings()) and their fields read as one flat config.
struct JobConfig : JobDefinition, RunSettings {
  JobConfig() = default;
  JobConfig(JobDefinition d, RunSettings s) : JobDefinition(std::move(d)), RunSettings(std::move(s)) {}
  const JobDefinition& definition() const { return *this; }
  JobDefinition& definition() { return *this; }
  const RunSettings& settings() const { return *this; }
  RunSettings& settings() { return *this; }
};

// Checks a config for consistency; InputError naming the offending setting.
void validate(const JobConfig& config);

// The crop side an imagefolder job feeds its model: imageSize, or 224 when it is 0.
inline int imageFolderSize(const JobDefinition& definition) {
  return definition.imageSize > 0 ? definition.imageSize : 224;
}

// JSON forms (checkpoints, summary.json). The definition's keys and the run settings' keys are
// disjoint, so a config is stored as one flat object holding both.
nlohmann::json toJson(const JobDefinition& definition);
nlohmann::json toJson(const RunSettings& settings);
nlohmann::json toJson(const JobConfig& config);
// Inverses; InputError naming a missing or mistyped field.
JobDefinition jobDefinitionFromJson(const nlohmann::json& json);
RunSettings runSettingsFromJson(const nlohmann::json& json);
JobConfig jobConfigFromJson(const nlohmann::json& json);

}  // namespace tl
