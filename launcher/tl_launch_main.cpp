// tl-launch: one training job, run as `mpirun -np P tl-launch ...`.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/files.h"
#include "launcher/job_errors.h"
#include "launcher/launch_options.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/models/state_dict_io.h"
#include "runtime/train/summary.h"
#include "runtime/train/trainer.h"

namespace {

constexpr const char* kProgram = "tl-launch";

int runLaunch(int argc, char** argv) {
  using namespace tl;
  auto world = comm::createMpiWorldCommunicator();
  const bool lead = world->rank() == 0;
  spdlog::set_pattern("%H:%M:%S [tl] %v");

  launcher::LaunchOptions options;
  std::unique_ptr<train::DataParallelTrainer> trainer;
  int failed = launcher::prepareOnAllRanks(*world, kProgram, [&] {
    std::vector<std::string> args(argv + 1, argv + argc);
    options = launcher::parseLaunchOptions(args);
    if (options.help) return;
    if (lead && !options.job.outputDir.empty()) ensureWritableDir(options.job.outputDir);
    trainer = std::make_unique<train::DataParallelTrainer>(options.job, *world, *world);
  });
  if (failed) return failed;
  if (options.help) {
    if (lead) std::fputs(options.usage.c_str(), stdout);
    return 0;
  }

  const auto& job = trainer->config();
  if (lead) {
    spdlog::info("{} processes, model {} ({} parameters), {} steps ({} per epoch), batch {} per worker",
                 world->size(), job.model.arch, models::countParameters(trainer->model()),
                 trainer->plan().totalSteps, trainer->plan().stepsPerEpoch, job.batch);
  }
  train::MetricsLog metrics;
  if (lead && !job.outputDir.empty()) metrics = train::MetricsLog(joinPath(job.outputDir, "metrics.jsonl"));
  train::TrainResult result = trainer->run(metrics);

  if (lead) {
    train::RunInfo info;
    info.processes = world->size();
    info.logicalWorkers = world->size();
    info.placement = "";
    for (int r = 0; r < world->size(); ++r) info.placement += (r ? ",1" : "1");
    auto summary = train::summaryJson(result, job, info);
    if (!job.outputDir.empty()) train::writeSummary(summary, job.outputDir);
    if (!job.saveModel.empty()) models::saveStateDict(trainer->model(), job.saveModel);
    spdlog::info("done: {} steps in {:.1f} s, {:.1f} images/s, final loss {:.4f}{}", result.steps,
                 result.wallSeconds, result.imagesPerSecond, result.finalLoss,
                 result.evaluated ? tl::str(", test accuracy ", result.testAccuracy * 100, "%") : "");
    spdlog::info("params_sha256 {}", result.paramsSha256);
  }
  world->barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<tl::comm::MpiSession> mpi;
  try {
    mpi = std::make_unique<tl::comm::MpiSession>(&argc, &argv);
  } catch (const std::exception& e) {
    tl::launcher::printError(kProgram, e.what());
    return 1;
  }
  // A failure after start-up may hit one rank only while the others wait in a collective:
  // abort the whole job at once (MPI still alive) rather than unwind into MPI_Finalize.
  try {
    return runLaunch(argc, argv);
  } catch (const tl::InputError& e) {
    tl::launcher::printError(kProgram, e.what());
    tl::comm::MpiSession::abortJob(2);
  } catch (const std::exception& e) {
    tl::launcher::printError(kProgram, e.what());
    tl::comm::MpiSession::abortJob(1);
  }
}
