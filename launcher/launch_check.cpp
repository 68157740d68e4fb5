#include "launcher/launch_check.h"

#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/check.h"
#include "elastic/checkpoint/job_checkpoint.h"
#include "est/local_batches.h"
#include "est/placement.h"
#include "launcher/job_errors.h"
#include "launcher/launch_options.h"
#include "launcher/output_paths.h"
#include "runtime/comm/nccl/nccl_communicator.h"
#include "runtime/models/model.h"
#include "runtime/train/data_setup.h"
#include "runtime/train/model_check.h"
#include "runtime/train/out_of_memory.h"
#include "runtime/train/trainer_result.h"

namespace tl::launcher {
namespace {

constexpr const char* kProgram = "tl-launch";

// mpirun's view of this process (when there is one): rank, local rank and world size.
int environmentInt(std::initializer_list<const char*> names, int fallback) {
  for (const char* name : names) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return fallback;
}

// False when it printed the help instead.
bool checkJob(const std::vector<std::string>& args, int worldSize, int localRank) {
  LaunchOptions options = parseLaunchOptions(args);
  if (options.help) {
    std::fputs(options.usage.c_str(), stdout);
    return false;
  }
  if (!options.resume.empty()) {
    // Reads and verifies the whole checkpoint, as a resume does.
    elastic::JobCheckpoint checkpoint = elastic::readJobCheckpoint(options.resume);
    options = parseResumeOptions(args, checkpoint.config);
  }
  const int processes = options.checkProcesses > 0 ? options.checkProcesses : worldSize;
  auto [job, placement] = jobForProcess(options, processes, localRank);
  checkOutputs(options);
  // What the executor's builder does before training, on this process alone.
  validate(job);
  train::JobData data;
  train::whileBuilding("the data loader", [&] { data = train::openJobData(job); });
  train::adaptModelToData(job, *data.train);
  if (job.evalEvery > 0) train::resolveEvalBatches(job, *data.test);  // more batches than the split holds
  std::shared_ptr<models::Model> model;
  train::whileBuilding(train::describeModel(job.model), [&] { model = models::createModel(job.model); });
  train::checkModelOnData(*model, job.model, *data.train, c10::Device(c10::kCPU));
  const int64_t batchesPerEpoch =
      est::shardStream(job, data.train->size(), placement.logicalWorkers(), 0)
          .batchesPerEpoch();
  train::planSteps(job, batchesPerEpoch);
  return true;
}

}  // namespace

bool wantsCheck(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0 || std::strncmp(argv[i], "--check=", 8) == 0)
      return true;
  }
  return false;
}

int runCheck(int argc, char** argv) {
  const int rank = environmentInt({"OMPI_COMM_WORLD_RANK", "PMI_RANK"}, 0);
  const int size = environmentInt({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1);
  const int localRank =
      environmentInt({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}, 0);
  try {
    if (!checkJob(std::vector<std::string>(argv + 1, argv + argc), size, localRank)) return 0;
  } catch (const std::exception& e) {
    const std::string message = errorMessage(e, "checking the job");
    printError(kProgram, size > 1 && rank != 0 ? tl::str("rank ", rank, ": ", message) : message);
    return exitCodeFor(e);
  }
  if (rank == 0) std::printf("ok\n");
  return 0;
}

}  // namespace tl::launcher
