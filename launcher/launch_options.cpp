#include "launcher/launch_options.h"

#include "common/check.h"
#include "dataload/dataset.h"
#include "launcher/flags.h"
#include "runtime/models/model.h"
#include "runtime/optim/optimizer.h"

namespace tl::launcher {

LaunchOptions parseLaunchOptions(const std::vector<std::string>& args) {
  LaunchOptions out;
  JobConfig& j = out.job;
  j.model.arch = "cnn";
  j.dataset = "fashion-mnist";
  j.optimizer.name = "sgd";
  j.optimizer.lr = 0.05;
  j.optimizer.momentum = 0.9;
  j.reduction = "exact";
  std::string augment = "on";
  bool noBatchnorm = false;
  int64_t seed = 0;
  double bucketMb = 25;

  FlagSet f("tl-launch",
            "Trains one data-parallel job; run it as `mpirun -np P tl-launch ...`, one process per device.");
  f.addChoice("model", &j.model.arch, models::modelNames(), "model architecture");
  f.addInt("depth", &j.model.depth, "depth of the CIFAR ResNet (6n+2: 20, 32, 56, ...)", 0);
  f.addBool("no-batchnorm", &noBatchnorm, "build the model without BatchNorm layers");
  f.addDouble("dropout", &j.model.dropout, "dropout probability (negative: the model's default)", -1, 0.99);
  f.addChoice("dataset", &j.dataset, data::datasetKinds(), "dataset format");
  f.addString("data-dir", &j.dataDir, "folder holding the dataset files (default for fashion-mnist: " +
                                          std::string(kFashionMnistDir) + ")");
  f.addChoice("augment", &augment, {"on", "off"}, "random crop and flip of training images");
  int imageSize = 224;  // the job keeps 0 ("the default") unless the flag is given
  f.addInt("image-size", &imageSize,
           "imagefolder: side of the crops fed to the model (RandomResizedCrop, or resize + "
           "centre crop)",
           1, 4096);
  f.addBool("skip-corrupt", &j.skipCorrupt,
            "imagefolder: replace a file that does not decode by the next one of its class, "
            "and count it, instead of failing");
  f.addBool("drop-last", &j.dropLastBatch, "drop each epoch's last short batch");
  f.addInt("batch", &j.batch, "batch size per worker", 1);
  std::string workers = "2";
  f.addString("workers", &workers,
              "loader threads per process (0: load on the training thread), or 'auto': the node coordinator sizes the pool");
  f.addInt("prefetch", &j.prefetch, "batches prepared ahead per loader thread", 1, 64);
  f.addInt("epochs", &j.epochs, "epochs to train (default 1 unless --steps is given)", 0);
  f.addInt("steps", &j.steps, "optimizer steps to train (instead of --epochs); 0 = none", 0);
  f.addChoice("optimizer", &j.optimizer.name, optim::optimizerNames(), "optimizer");
  f.addDouble("lr", &j.optimizer.lr, "base learning rate", 0);
  f.addDouble("momentum", &j.optimizer.momentum, "momentum (sgd, nesterov)", 0, 1);
  f.addDouble("weight-decay", &j.optimizer.weightDecay, "weight decay", 0);
  f.addDouble("beta1", &j.optimizer.beta1, "Adam beta1", 0, 1);
  f.addDouble("beta2", &j.optimizer.beta2, "Adam beta2", 0, 1);
  f.addDouble("rho", &j.optimizer.rho, "Adadelta rho", 0, 1);
  f.addChoice("lr-schedule", &j.schedule.kind, {"constant", "step", "cosine"}, "learning-rate schedule");
  f.addDouble("lr-step-epochs", &j.schedule.stepEpochs, "step schedule: epochs between decays", 0);
  f.addDouble("lr-gamma", &j.schedule.gamma, "step schedule: decay factor", 0, 1);
  f.addDouble("warmup-epochs", &j.schedule.warmupEpochs, "linear warm-up length in epochs", 0);
  f.addDouble("min-lr", &j.schedule.minLr, "cosine schedule: final learning rate", 0);
  f.addInt("seed", &seed, "seed of the job (model init, data order, augmentation)", 0);
  f.addString("device", &j.device,
              "device of each process: cpu, cuda, or sim:RATE (a stand-in consuming RATE images/s without a core)");
  f.addInt("compute-threads", &j.computeThreads, "intra-op threads per worker (part of the job's result)", 1, 256);
  f.addChoice("reduction", &j.reduction, {"exact", "fp32"}, "gradient reduction");
  f.addDouble("bucket-mb", &bucketMb, "gradient bucket size in MiB", 0.001, 4096);
  f.addString("output-dir", &j.outputDir, "folder for metrics.jsonl and summary.json");
  f.addBool("eval", &j.eval, "evaluate on the test set after every epoch");
  f.addString("save-model", &j.saveModel, "write the model's state dict (torch.load-able) here at the end");
  f.addInt("log-every", &j.logEvery, "progress line every this many steps (0: none)", 0);
  f.addInt("logical-workers", &out.logicalWorkers,
           "N, the job's logical workers (ESTs); the result is that of DDP with N processes [default: one per process]", 1, 1 << 20);
  std::string placement;
  f.addString("placement", &placement, "ESTs per process in rank order, e.g. 2,1,1 [default: even]");
  f.addString("checkpoint-dir", &out.checkpointDir,
              "where checkpoints go [default: <output-dir>/checkpoint, or the --resume folder]");
  f.addInt("checkpoint-every", &out.checkpointEvery, "checkpoint every this many steps (0: only on SIGUSR1)", 0);
  f.addInt("stop-at-step", &out.stopAtStep, "checkpoint and exit after this step (0: run to the end)", 0);
  f.addString("coordinator-dir", &out.coordinatorDir,
              "run directory of this node's loader coordinator, for --workers auto [default: /tmp/tl-coordinator-<uid>]");
  f.addChoice("gpu-comm", &out.gpuComm, {"nccl", "mpi"},
              "--device cuda: how tensors travel between processes; nccl needs one GPU per process, "
              "mpi stages them through host memory and lets processes share GPUs (local rank r uses "
              "GPU r mod the GPU count); with --reduction exact the result is the same");
  f.addString("resume", &out.resume, "continue the job checkpointed in this folder, on any number of processes");

  if (!f.parse(args)) {
    out.help = true;
    out.usage = f.usage();
    return out;
  }
  for (const auto& name : f.givenFlags()) out.given.insert(name);
  if (workers == "auto") {
    j.autoWorkers = true;
    j.workers = 1;  // until the coordinator assigns a size
  } else {
    int64_t w = parseInt(workers, "--workers");
    TL_REQUIRE(w >= 0 && w <= 256, "--workers: must be between 0 and 256 or 'auto', got ", w);
    j.workers = int(w);
  }
  if (f.given("placement")) out.placement = parseIntList(placement, "--placement");
  if (out.checkpointDir.empty()) {
    if (!out.resume.empty()) out.checkpointDir = out.resume;
    else if (!j.outputDir.empty()) out.checkpointDir = j.outputDir + "/checkpoint";
  }
  TL_REQUIRE(out.checkpointEvery == 0 || !out.checkpointDir.empty(),
             "--checkpoint-every needs --checkpoint-dir or --output-dir");
  TL_REQUIRE(out.stopAtStep == 0 || !out.checkpointDir.empty(),
             "--stop-at-step needs --checkpoint-dir or --output-dir (it writes a checkpoint)");
  TL_REQUIRE(!(f.given("epochs") && f.given("steps")), "give --epochs or --steps, not both");
  if (!f.given("epochs") && !f.given("steps")) j.epochs = 1;
  if (!f.given("data-dir") && j.dataset == "fashion-mnist") j.dataDir = kFashionMnistDir;
  if (f.given("image-size")) j.imageSize = imageSize;
  j.model.batchNorm = !noBatchnorm;
  j.augment = augment == "on";
  j.seed = uint64_t(seed);
  j.bucketBytes = int64_t(bucketMb * 1024 * 1024);
  if (!out.resume.empty()) return out;  // the rest is checked against the checkpoint's job
  TL_REQUIRE(j.model.arch != "resnet" || f.given("depth"),
             "--model resnet needs --depth (6n+2: 20, 32, 44, 56, 110)");
  TL_REQUIRE(j.model.arch == "resnet" || !f.given("depth"), "--depth applies to --model resnet only");
  TL_REQUIRE(!j.outputDir.empty() || !f.given("output-dir"), "--output-dir: must not be empty");
  validate(j);
  return out;
}

}  // namespace tl::launcher
