#include "launcher/job_flags.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/check.h"
#include "common/cli/cli.h"
#include "dataload/dataset.h"
#include "launcher/flag_kinds.h"
#include "runtime/models/model.h"
#include "runtime/models/model_names.h"
#include "runtime/models/torchscript_model.h"
#include "runtime/optim/decay_groups.h"
#include "runtime/optim/optimizer.h"

namespace tl::launcher {
namespace {

using namespace flag_kinds;

// The model: a built-in architecture, or the user's TorchScript module and its loss.
void addModelFlags(std::vector<LaunchFlag>& t) {
  t.push_back(choice("model", kDefining, "model architecture", models::modelNames(), "mlp", TL_FIELD(job.model.arch)));
  t.push_back(integer<int>("depth", kDefining, "depth of the CIFAR ResNet (6n+2: 20, 32, 56, ...)", "20",
                           TL_FIELD(job.model.depth), 0));
  t.push_back(toggle("no-batchnorm", kDefining, "build the model without BatchNorm layers",
                     TL_FIELD(job.model.batchNorm), false));
  t.push_back(real("dropout", kDefining, "dropout probability (negative: the model's default; cnn 0.25, others none)",
                   "0.5", TL_FIELD(job.model.dropout), -1, 0.99));
  // --- Your own model (issue 28): a TorchScript module and how its output is scored.
  t.push_back(custom(
      "model-file", kDefining,
      "train this TorchScript module (torch.jit.script(model).save(FILE)) instead of --model; the file's "
      "SHA-256 defines the job (a resume may find it elsewhere, not changed)",
      "/etc/os-release",
      [](LaunchOptions& o, const std::string& v) {
        TL_REQUIRE(!v.empty(), "--model-file: must not be empty");
        o.job.model.fileSha256 = models::fileSha256(v, "--model-file");
        o.job.model.file = v;
        o.job.model.arch = models::kTorchScriptArch;
      },
      [](const LaunchOptions& o) {
        return o.job.model.fileSha256.empty() ? std::string() : "sha256:" + o.job.model.fileSha256;
      }));
  t.push_back(choice("loss", kDefining, "loss of the model's output against the labels", models::lossNames(), "mse",
                     TL_FIELD(job.model.loss)));
  t.push_back(custom(
      "model-returns", kDefining,
      "--model-file: what forward returns (logits|loss): class scores, or its own scalar loss of "
      "forward(inputs, targets)",
      "loss",
      [](LaunchOptions& o, const std::string& v) {
        TL_REQUIRE(v == "logits" || v == "loss", "--model-returns: unknown value '", v,
                   "' (expected one of logits|loss)");
        o.job.model.returnsLoss = v == "loss";
      },
      [](const LaunchOptions& o) { return std::string(o.job.model.returnsLoss ? "loss" : "logits"); }));
}

// The data: format, location, augmentation, batch and loading.
void addDataFlags(std::vector<LaunchFlag>& t) {
  t.push_back(choice("dataset", kDefining, "dataset format", data::datasetKinds(), "cifar10", TL_FIELD(job.dataset)));
  t.push_back(string("data-dir", kRun,
                     "folder holding the dataset files [fashion-mnist: " + std::string(kFashionMnistDir) + "]",
                     "/data/elsewhere", TL_FIELD(job.dataDir)));
  t.push_back(custom(
      "augment", kDefining,
      "training augmentation (on|off): cifar10 random crop 32 after padding 4 + flip; mnist and "
      "fashion-mnist a random shift by up to 2 px, no flip; imagefolder RandomResizedCrop + flip",
      "off",
      [](LaunchOptions& o, const std::string& v) {
        TL_REQUIRE(v == "on" || v == "off", "--augment: unknown value '", v, "' (expected one of on|off)");
        o.job.augment = v == "on";
      },
      [](const LaunchOptions& o) { return std::string(o.job.augment ? "on" : "off"); }));
  t.push_back(custom(
      "image-size", kDefining,
      "imagefolder: side of the crops fed to the model (RandomResizedCrop, or resize + centre crop)", "64",
      [](LaunchOptions& o, const std::string& v) {
        const int64_t x = parseInt(v, "--image-size");
        TL_REQUIRE(x >= 1 && x <= 4096, "--image-size: must be between 1 and 4096, got ", x);
        o.job.imageSize = int(x);
      },
      [](const LaunchOptions& o) { return text(imageFolderSize(o.job)); }));
  t.push_back(toggle("skip-corrupt", kDefining,
                     "imagefolder: replace a file that does not decode by the next one of its class, and "
                     "count it (summary.json: corrupt_files_skipped), instead of failing",
                     TL_FIELD(job.skipCorrupt), true));
  t.push_back(toggle("drop-last", kDefining, "drop each epoch's last short batch", TL_FIELD(job.dropLastBatch), true));
  // Array datasets (tensors, tokens: dataload/array_dataset.h).
  t.push_back(integer<int64_t>("seq-len", kDefining,
                               "tokens: tokens per sample (its targets are the next tokens)", "128",
                               TL_FIELD(job.seqLen), 1));
  t.push_back(choice("token-dtype", kDefining,
                     "tokens: read raw little-endian train.bin/val.bin of this width instead of .npy files",
                     {"uint16", "uint32"}, "uint16", TL_FIELD(job.tokenDtype)));
  t.push_back(integer<int64_t>("batch", kDefining, "batch size per logical worker", "16", TL_FIELD(job.batch), 1));
  t.push_back(integer<int64_t>("micro-batches", kDefining,
                               "compute each worker's batch in this many equal pieces, accumulating the gradient of "
                               "each piece's loss / K, as PyTorch's accumulation with no_sync (for memory; K defines "
                               "the job: K = 2 does not give K = 1's bits; --batch must be divisible by K)",
                               "4", TL_FIELD(job.microBatches), 1));
  t.push_back(custom(
      "workers", kRun,
      "loader threads per process (0: load on the training thread), or 'auto': the node coordinator sizes the pool",
      "auto",
      [](LaunchOptions& o, const std::string& v) {
        if (v == "auto") {
          o.job.autoWorkers = true;
          o.job.workers = 1;  // until the coordinator assigns a size
          return;
        }
        const int64_t w = parseInt(v, "--workers");
        TL_REQUIRE(w >= 0 && w <= 256, "--workers: must be between 0 and 256 or 'auto', got ", w);
        o.job.workers = int(w);
        o.job.autoWorkers = false;
      },
      [](const LaunchOptions& o) { return o.job.autoWorkers ? std::string("auto") : text(o.job.workers); }));
  t.push_back(real("cache-mb", kRun,
                    "imagefolder: keep up to this many MiB of encoded training images in memory; "
                    "admitted images stay, the rest is read from storage every epoch (no page cache)",
                    "256", TL_FIELD(job.cacheMb), 0, 1 << 30));
  t.push_back(custom(
      "emulate-storage-mbps", kRun,
      "imagefolder: emulate slow storage: a training or validation image read from storage takes "
      "at "
      "least its bytes / (R * 10^6) seconds, the rest spent sleeping (no core, no change to any "
      "sample or its order; the summary marks the run as emulated) [off]",
      "4",
      [](LaunchOptions& o, const std::string& v) {
        const double mbps = parseDouble(v, "--emulate-storage-mbps");
        TL_REQUIRE(mbps >= 0.001 && mbps <= 1e6,
                   "--emulate-storage-mbps: must be a rate in MB/s "
                   "between 0.001 and 1000000, got ",
                   v);
        o.job.emulateStorageMbps = mbps;
      },
      [](const LaunchOptions& o) {
        return o.job.emulateStorageMbps > 0 ? text(o.job.emulateStorageMbps) : std::string("off");
      }));
  t.back().realRange = std::make_pair(0.001, 1e6);
  t.push_back(integer<int>("prefetch", kRun, "batches prepared ahead per loader thread", "4", TL_FIELD(job.prefetch), 1, 64));
}

// The job's length and its optimizer (with gradient clipping).
void addOptimizerFlags(std::vector<LaunchFlag>& t) {
  t.push_back(integer<int64_t>("epochs", kDefining, "epochs to train (1 unless --steps is given)", "3",
                               TL_FIELD(job.epochs), 0));
  t.push_back(integer<int64_t>("steps", kDefining, "optimizer steps to train (instead of --epochs)", "7",
                               TL_FIELD(job.steps), 0));
  t.push_back(choice("optimizer", kDefining, "optimizer", optim::optimizerNames(), "adam", TL_FIELD(job.optimizer.name)));
  t.push_back(
      real("lr", kDefining, "base learning rate", "0.2", TL_FIELD(job.optimizer.lr), 0, kMaxRate));
  t.push_back(real("momentum", kDefining, "momentum (sgd, nesterov)", "0.5", TL_FIELD(job.optimizer.momentum), 0, 1));
  t.push_back(real("dampening", kDefining, "momentum dampening (sgd)", "0.1", TL_FIELD(job.optimizer.dampening), 0, 1));
  t.push_back(real("weight-decay", kDefining, "weight decay (decoupled for adamw)", "0.0005",
                   TL_FIELD(job.optimizer.weightDecay), 0, kMaxRate));
  t.push_back(choice("weight-decay-on", kDefining,
                     "which parameters --weight-decay applies to: all, or matrices: those with 2 or more "
                     "dimensions (nanoGPT's rule: not biases, not norm gains), as a PyTorch parameter group "
                     "with weight_decay 0 for the rest",
                     {"all", "matrices"}, "matrices", TL_FIELD(job.weightDecayOn)));
  t.push_back(custom(
      "no-decay", kDefining,
      "also no weight decay for the parameters whose name (named_parameters: blocks.0.ln_1.weight) this "
      "ECMAScript regular expression matches somewhere in [none]",
      "bias|ln",
      [](LaunchOptions& o, const std::string& v) {
        TL_REQUIRE(!v.empty(), "--no-decay: must not be empty");
        optim::checkNoDecayPattern(v);
        o.job.noDecay = v;
      },
      [](const LaunchOptions& o) { return o.job.noDecay; }));
  t.push_back(belowOne(real("beta1", kDefining, "Adam beta1, in [0, 1)", "0.8", TL_FIELD(job.optimizer.beta1), 0, 1)));
  t.push_back(belowOne(real("beta2", kDefining, "Adam beta2, in [0, 1)", "0.99", TL_FIELD(job.optimizer.beta2), 0, 1)));
  t.push_back(real("eps", kDefining, "term added to denominators (negative: PyTorch's default per optimizer)",
                   "1e-07", TL_FIELD(job.optimizer.eps), -1, 1));
  t.push_back(real("rho", kDefining, "Adadelta rho", "0.8", TL_FIELD(job.optimizer.rho), 0, 1));
  t.push_back(real("lr-decay", kDefining, "Adagrad learning-rate decay", "0.01",
                   TL_FIELD(job.optimizer.lrDecay), 0, kMaxRate));
  t.push_back(real("initial-accumulator", kDefining, "Adagrad initial accumulator value", "0.1",
                   TL_FIELD(job.optimizer.initialAccumulator), 0, kMaxRate));
  t.push_back(real("clip-grad-norm", kDefining,
                   "clip the reduced gradient's global L2 norm to this before each update, as PyTorch's "
                   "clip_grad_norm_ (0: off); steps record grad_norm, the norm before clipping, and a "
                   "non-finite norm ends the job naming the step",
                   "1.0", TL_FIELD(job.clipGradNorm), 0, kMaxEpochs));
}

// The learning-rate schedule.
void addScheduleFlags(std::vector<LaunchFlag>& t) {
  t.push_back(choice("lr-schedule", kDefining,
                     "learning-rate schedule; linear (and cosine or constant with --warmup-steps or "
                     "--decay-steps) counts steps, as nanoGPT's get_lr",
                     {"constant", "step", "cosine", "linear"}, "cosine", TL_FIELD(job.schedule.kind)));
  t.push_back(real("lr-step-epochs", kDefining, "step schedule: epochs between decays", "2",
                   TL_FIELD(job.schedule.stepEpochs), 0, kMaxEpochs));
  t.push_back(real("lr-gamma", kDefining, "step schedule: decay factor", "0.5", TL_FIELD(job.schedule.gamma), 0, 1));
  t.push_back(real("warmup-epochs", kDefining, "linear warm-up length in epochs", "1",
                   TL_FIELD(job.schedule.warmupEpochs), 0, kMaxEpochs));
  t.push_back(real("min-lr", kDefining, "cosine schedule: final learning rate", "0.001",
                   TL_FIELD(job.schedule.minLr), 0, kMaxRate));
  // In steps (runtime/optim/lr_schedule.h: nanoGPT's get_lr); -1 in the job: not given.
  const auto stepCount = [](const char* name, std::string help, std::string example, auto field) {
    const std::string flag = std::string("--") + name;
    return custom(
        name, kDefining, std::move(help), std::move(example),
        [flag, field](LaunchOptions& o, const std::string& v) {
          const int64_t x = parseInt(v, flag);
          if (x < 0) inputError(flag, ": must be at least 0, got ", x);
          field(o) = x;
        },
        [field](const LaunchOptions& o) {
          const int64_t x = field(const_cast<LaunchOptions&>(o));
          return x < 0 ? std::string() : text(x);
        });
  };
  t.push_back(stepCount("warmup-steps",
                        "linear warm-up over this many steps: step i (from 0) < W takes lr * (i + 1) / (W + 1); "
                        "then the schedule in steps [none]",
                        "100", TL_FIELD(job.schedule.warmupSteps)));
  t.push_back(stepCount("decay-steps",
                        "cosine or linear in steps: the step index (from 0) at which the decay from --lr reaches "
                        "--min-lr, kept after [the job's last step]",
                        "1000", TL_FIELD(job.schedule.decaySteps)));
}

// What else decides the bits, whatever the placement: the seed, N (the logical workers), their
// intra-op threads and the reduction.
void addElasticFlags(std::vector<LaunchFlag>& t) {
  t.push_back(integer<uint64_t>("seed", kDefining, "seed of the job (model init, data order, augmentation)", "9",
                                TL_FIELD(job.seed), 0));
  t.push_back(integer<int>("logical-workers", kDefining,
                           "N, the job's logical workers (ESTs); the result is that of DDP with N processes "
                           "[0: one per process]",
                           "4", TL_FIELD(job.logicalWorkers), 1, 1 << 20));
  t.push_back(integer<int>("compute-threads", kDefining, "intra-op threads per worker (part of the job's result)", "2",
                           TL_FIELD(job.computeThreads), 1, 256));
  t.push_back(custom(
      "reduction", kDefining,
      "gradient reduction (exact|fp32): exact gives the same bits on every placement; fp32 is a plain float allreduce",
      "fp32", [](LaunchOptions& o, const std::string& v) { o.job.reduction = parseReduction(v); },
      [](const LaunchOptions& o) { return std::string(toString(o.job.reduction)); }));
}

// Where and how this launch runs: device, placement, outputs, checkpoints, control, resume, check.
void addRunFlags(std::vector<LaunchFlag>& t) {
  t.push_back(custom(
      "device", kRun, "device of each process: cpu, cuda, or sim:RATE (a stand-in consuming RATE images/s without a core)",
      "sim:2000", [](LaunchOptions& o, const std::string& v) { o.job.device = DeviceSpec::parse(v); },
      [](const LaunchOptions& o) { return o.job.device.toString(); }));
  t.push_back(choice("gpu-comm", kRun,
                     "--device cuda: how tensors travel between processes; nccl needs one GPU per process, mpi "
                     "stages them through host memory and lets processes share GPUs (local rank r uses GPU r mod "
                     "the GPU count); with --reduction exact the result is the same",
                     {"nccl", "mpi"}, "mpi", TL_FIELD(gpuComm)));
  t.push_back(custom(
      "bucket-mb", kRun, "gradient bucket size in MiB", "8",
      [](LaunchOptions& o, const std::string& v) {
        const double mb = parseDouble(v, "--bucket-mb");
        TL_REQUIRE(mb >= 0.001 && mb <= 4096, "--bucket-mb: must be between 0.001 and 4096, got ", mb);
        o.job.bucketBytes = int64_t(mb * 1024 * 1024);
      },
      [](const LaunchOptions& o) { return text(double(o.job.bucketBytes) / (1024 * 1024)); }));
  t.back().realRange = std::make_pair(0.001, 4096.0);
  t.push_back(custom(
      "overlap", kRun,
      "reduce each gradient bucket as soon as backward has produced it, while the rest of backward "
      "runs (on|off); the result is the same bit for bit",
      "off",
      [](LaunchOptions& o, const std::string& v) {
        TL_REQUIRE(v == "on" || v == "off", "--overlap: unknown value '", v, "' (expected one of on|off)");
        o.job.overlap = v == "on";
      },
      [](const LaunchOptions& o) { return std::string(o.job.overlap ? "on" : "off"); }));
  t.push_back(custom(
      "placement", kRun,
      "ESTs per process in rank order, e.g. 2,1,1, or auto: planned from each process's measured speed and "
      "re-planned while the job runs [even]",
      "3,1",
      [](LaunchOptions& o, const std::string& v) {
        o.autoPlacement.enabled = v == "auto";
        o.placement = o.autoPlacement.enabled ? std::vector<int64_t>{} : parseIntList(v, "--placement");
      },
      [](const LaunchOptions& o) {
        if (o.autoPlacement.enabled) return std::string("auto");
        std::string s;
        for (int64_t c : o.placement) s += (s.empty() ? "" : ",") + std::to_string(c);
        return s;
      }));
  addAutoPlacementFlags(t);
  t.push_back(string("output-dir", kRun, "folder for metrics.jsonl and summary.json", "/tmp/out", TL_FIELD(job.outputDir)));
  t.push_back(toggle("eval", kRun, "evaluate on the test set after every epoch", TL_FIELD(job.eval), true));
  // Periodic validation (docs/guide/gpt-recipe.md).
  t.push_back(custom(
      "eval-every", kRun,
      "periodic validation: every S (this value) optimizer steps, after steps S, 2S, ..., the mean loss of "
      "--eval-batches fixed batches of the test split, the same on every placement, recorded in metrics.jsonl as "
      "{\"type\": \"eval\", \"step\": S, \"val_loss\": ...} (tokens: also val_ppl); it changes no training "
      "bit [off]",
      "50",
      [](LaunchOptions& o, const std::string& v) {
        const int64_t x = parseInt(v, "--eval-every");
        if (x < 1) inputError("--eval-every: must be at least 1, got ", x);
        o.job.evalEvery = x;
      },
      [](const LaunchOptions& o) { return o.job.evalEvery > 0 ? text(o.job.evalEvery) : std::string(); }));
  t.push_back(custom(
      "eval-batches", kRun,
      "--eval-every: the validation batches, of --batch samples each: the test split's first B batches "
      "[" + std::to_string(kDefaultEvalBatches) + ", or as many as the split holds]",
      "8",
      [](LaunchOptions& o, const std::string& v) {
        const int64_t x = parseInt(v, "--eval-batches");
        if (x < 1) inputError("--eval-batches: must be at least 1, got ", x);
        o.job.evalBatches = x;
      },
      [](const LaunchOptions& o) { return o.job.evalBatches > 0 ? text(o.job.evalBatches) : std::string(); }));
  t.push_back(toggle("keep-best", kRun,
                     "--eval-every: also write the model of the lowest validation loss so far to "
                     "<output-dir>/best/ (model.pt, and model.torchscript.pt with --model-file; best.json), "
                     "and its step to summary.json's best",
                     TL_FIELD(job.keepBest), true));
  t.push_back(custom(
      "trace-steps", kRun,
      "record steps FIRST to LAST (counted from 1; one number: that step) with libtorch's "
      "profiler: every ATen op "
      "and tl's phases on the host and, with a CUDA libtorch that has Kineto, every kernel and "
      "copy on the GPU, "
      "written as a Chrome trace (chrome://tracing, ui.perfetto.dev) per process to "
      "<output-dir>/trace/rank-R.json; "
      "it changes no training bit [off]",
      "5-6",
      [](LaunchOptions& o, const std::string& v) {
        const size_t dash = v.find('-', 1);
        const int64_t first = parseInt(v.substr(0, dash), "--trace-steps");
        const int64_t last =
            dash == std::string::npos ? first : parseInt(v.substr(dash + 1), "--trace-steps");
        if (first < 1) inputError("--trace-steps: steps count from 1, got ", first);
        if (last < first)
          inputError("--trace-steps: the last step (", last, ") comes before the first (", first,
                     ")");
        o.job.traceFirst = first;
        o.job.traceLast = last;
      },
      [](const LaunchOptions& o) {
        return o.job.traceFirst > 0 ? text(o.job.traceFirst) + "-" + text(o.job.traceLast)
                                    : std::string();
      }));
  t.push_back(string("save-model", kRun, "write the model's state dict (torch.load-able) here at the end; with --model-file also the "
                     "trained module as TorchScript, beside it as <name>.torchscript.pt", "/tmp/m.pt",
                     TL_FIELD(job.saveModel)));
  t.push_back(real("collective-timeout", kRun,
                   "seconds a collective may wait for every process before the job ends, naming the processes "
                   "that did not join it (a stopped or hung rank)",
                   "30", TL_FIELD(job.collectiveTimeoutSeconds), 0.1, 1e7));
  t.push_back(integer<int64_t>("log-every", kRun, "progress line every this many steps (0: none)", "5",
                               TL_FIELD(job.logEvery), 0));
  t.push_back(string("checkpoint-dir", kRun, "where checkpoints go [<output-dir>/checkpoint, or the --resume folder]",
                     "/tmp/ck", TL_FIELD(checkpointDir)));
  t.push_back(integer<int64_t>("checkpoint-every", kRun, "checkpoint every this many steps (0: only on SIGUSR1)", "10",
                               TL_FIELD(checkpointEvery), 0));
  t.push_back(integer<int64_t>("stop-at-step", kRun, "checkpoint and exit after this step (0: run to the end)", "5",
                               TL_FIELD(stopAtStep), 0));
  t.push_back(string("coordinator-dir", kRun,
                     "run directory of this node's loader coordinator, for --workers auto [/tmp/tl-coordinator-<uid>]",
                     "/tmp/coord", TL_FIELD(coordinatorDir)));
  t.push_back(string("control-bind", kRun,
                     "address the job's control channel (tl-ctl) listens on; 'none': no control channel; needs "
                     "--output-dir, where the job publishes control.json and control.key",
                     "0.0.0.0", TL_FIELD(controlBind)));
  t.push_back(integer<int>("control-port", kRun, "port of the control channel (0: any free one, published in "
                           "<output-dir>/control.json)", "7070", TL_FIELD(controlPort), 0, 65535));
  t.push_back(real("join-timeout", kRun,
                   "seconds a process started by an in-place grow has to get ready before the grow is given up",
                   "600", TL_FIELD(joinTimeoutSeconds), 1, 86400));
  t.push_back(string("recovery-dir", kRun,
                     "keep a copy of the job at every step boundary and write it here when the job is lost "
                     "(set by tl-run)",
                     "/tmp/out/recovery", TL_FIELD(recoveryDir)));
  t.push_back(string("resume", kRun, "continue the job checkpointed in this folder, on any number of processes",
                     "/tmp/ck", TL_FIELD(resume)));
  t.push_back(toggle(
      "check", kRun,
      "check the job without training (no mpirun needed): parse the flags as a launch would, "
      "validate the job, open the data set, build the model, check every output path; print "
      "'ok' (exit 0) or the error (exit 2)",
      TL_FIELD(check), true));
  t.push_back(integer<int>(
      "check-processes", kRun,
      "--check: the processes the job will run on [0: as launched: 1, or mpirun's -np]", "2",
      TL_FIELD(checkProcesses), 0, 1 << 20));
}

// The table in the order --help lists it: one group after the other.
std::vector<LaunchFlag> buildTable() {
  std::vector<LaunchFlag> t;
  addModelFlags(t);
  addDataFlags(t);
  addOptimizerFlags(t);
  addScheduleFlags(t);
  addElasticFlags(t);
  addRunFlags(t);
  return t;
}

#undef TL_FIELD

}  // namespace

const std::vector<LaunchFlag>& launchFlags() {
  static const std::vector<LaunchFlag> table = buildTable();
  return table;
}

const LaunchFlag* findLaunchFlag(const std::string& name) {
  for (const auto& f : launchFlags()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace tl::launcher
