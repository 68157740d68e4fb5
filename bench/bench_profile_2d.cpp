// bench_profile_2d: tl-profile's 2-D profile (loader workers x cache budget) against a full grid
// of the same job measured in the same invocation, on an I/O-bound image folder.
//
// The job: a JPEG folder about twice the largest cache budget, read through --cache-mb with
// storage emulated at a few MB/s (--emulate-storage-mbps: every read from storage sleeps out
// bytes / R, no core), consumed by a sim device (--device sim:RATE: each batch is waited out, no
// core) so that the timings are sleep-dominated and mean something on a loaded 2-core machine.
// Every rate, the profile's and the grid's, is the steady state: from the start of the second
// epoch (the first reads every sample from storage whatever the budget) to the end of the run.
//
// Printed: each grid cell's prediction, its measured rate and the error, and the prediction of
// a cold profile (bursts shorter than an epoch: the steady state from the cache model alone)
// with its error; the check bursts' errors (the issue asks for ±10 %); the recommended
// (workers, budget) and its measured rate against the best measured cell (within 5 %), and
// how many runs each side took.
//
//   bench_profile_2d [--quick]     (--quick: a 2 x 3 grid, for trying it out)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "tools/profile/burst.h"

namespace {

using namespace tl::bench;
namespace fs = std::filesystem;

constexpr int kBatch = 16;
constexpr int kTrain = 800;         // 50 steps an epoch
constexpr int kSteps = 125;         // 2.5 epochs: 75 steady steps after the first epoch
constexpr int kColdSteps = 40;      // within the first epoch: a cold profile
constexpr double kStorageMbps = 2;  // emulated storage, MB/s
constexpr int kDeviceRate = 1500;   // sim device, images/s

std::string jobFlags(const std::string& data) {
  return " --dataset imagefolder --data-dir " + data + " --image-size 32 --model cnn --batch " +
         std::to_string(kBatch) + " --device sim:" + std::to_string(kDeviceRate) +
         " --emulate-storage-mbps " + std::to_string(kStorageMbps) + " --log-every 0";
}

double folderMiB(const std::string& dir) {
  double bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) bytes += double(e.file_size());
  return bytes / 1048576.0;
}

std::string mbText(double mb) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", mb);
  return buf;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

struct Cell {
  int workers = 0;
  double mb = 0;
  double predicted = 0;
  double measured = 0;
  bool warm = false;
};

std::vector<Cell> readPredictions(const std::string& csvPath, const std::vector<int>& workers) {
  std::vector<Cell> cells;
  std::ifstream csv(csvPath);
  std::string line;
  std::getline(csv, line);  // header
  while (std::getline(csv, line)) {
    Cell c;
    if (std::sscanf(line.c_str(), "%d,%lf,%lf", &c.workers, &c.mb, &c.predicted) == 3 &&
        std::find(workers.begin(), workers.end(), c.workers) != workers.end())
      cells.push_back(c);
  }
  return cells;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::string root = scratch("profile-2d");
  const std::string data = root + "/data";
  runOrDie(binDir() + "/tl-data jpeg-synth --out " + data + " --classes 4 --train " +
           std::to_string(kTrain) + " --val 8 --min-size 96 --max-size 160 --seed 1 >/dev/null");
  const double dataMiB = folderMiB(data + "/train");
  const double fullMb = dataMiB / 2;  // the data set is twice the largest budget
  const std::vector<int> workers = quick ? std::vector<int>{1, 2} : std::vector<int>{1, 2, 3, 4};
  const std::vector<double> grid =
      quick ? std::vector<double>{0, fullMb / 2, fullMb}
            : std::vector<double>{0, fullMb / 4, fullMb / 2, 3 * fullMb / 4, fullMb};
  std::string gridText;
  for (double mb : grid) gridText += (gridText.empty() ? "" : ",") + mbText(mb);
  const std::string checks =
      quick ? "1:0,2:" + mbText(fullMb) : "1:0,2:" + mbText(fullMb / 2) + ",3:" + mbText(fullMb);
  std::printf(
      "2-D profile vs a full grid: image folder of %d JPEGs, %.2f MiB (%.1fx the largest "
      "budget, %.2f MiB),\nstorage emulated at %.0f MB/s, sim device at %d images/s, "
      "batch %d, %d steps a run (%d an epoch); rates from epoch 2 on\n\n",
      kTrain, dataMiB, dataMiB / fullMb, fullMb, kStorageMbps, kDeviceRate, kBatch, kSteps,
      kTrain / kBatch);
  std::fflush(stdout);

  // The profile: a worker sweep at the full budget, the memory dimension derived, checks. Then
  // the same with bursts shorter than an epoch (cold: the steady state from the model alone).
  std::string sweep;
  for (int w : workers) sweep += (sweep.empty() ? "" : ",") + std::to_string(w);
  auto profile = [&](const std::string& name, int steps) {
    runOrDie(binDir() + "/tl-profile --workers-sweep " + sweep + " --max-iterations " +
             std::to_string(steps) + " --warmup-steps 2 --oversubscribe --cache-mb " +
             mbText(fullMb) + " --cache-grid " + gridText + " --cache-check " + checks +
             " --tolerance 0.02 --out " + root + "/" + name + " --mpirun " + TL_MPIEXEC + " --" +
             jobFlags(data) + " > " + root + "/" + name + ".log 2>&1");
  };
  const std::string prof = root + "/prof";
  const auto profileStart = std::chrono::steady_clock::now();
  profile("prof", kSteps);
  const double profileSeconds = seconds(profileStart);
  profile("prof_cold", kColdSteps);
  const nlohmann::json p = readJson(prof + "/profile_2d.json");
  const int profileRuns = int(workers.size() + p["checks"].size());

  std::vector<Cell> cells = readPredictions(prof + "/profile_2d.csv", workers);
  const std::vector<Cell> cold = readPredictions(root + "/prof_cold/profile_2d.csv", workers);

  // The full grid, measured: one run a cell.
  const auto gridStart = std::chrono::steady_clock::now();
  for (Cell& c : cells) {
    const std::string out = root + "/grid_w" + std::to_string(c.workers) + "_" + mbText(c.mb);
    runOrDie(mpirun(1) + binDir() + "/tl-launch" + jobFlags(data) + " --cache-mb " + mbText(c.mb) +
             " --workers " + std::to_string(c.workers) + " --steps " + std::to_string(kSteps) +
             " --output-dir " + out + " > " + out + ".log 2>&1");
    const tl::profile::BurstMeasurement m = tl::profile::readBurst(out, c.workers, 2, true);
    c.measured = m.imagesPerSecond;
    c.warm = m.warm;
  }
  const double gridSeconds = seconds(gridStart);

  std::printf("%8s %10s %12s %12s %8s %12s %8s\n", "workers", "cache MiB", "predicted", "measured",
              "error", "cold pred.", "error");
  double worstCell = 0, worstCold = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    const double error = c.predicted / c.measured - 1;
    const double coldError = i < cold.size() ? cold[i].predicted / c.measured - 1 : NAN;
    worstCell = std::max(worstCell, std::abs(error));
    worstCold = std::max(worstCold, std::abs(coldError));
    std::printf("%8d %10.2f %12.1f %12.1f %+7.1f%% %12.1f %+7.1f%%%s\n", c.workers, c.mb,
                c.predicted, c.measured, 100 * error, i < cold.size() ? cold[i].predicted : NAN,
                100 * coldError, c.warm ? "" : "  (measured cold)");
  }
  std::printf("\ncheck bursts of the profile (measured warm by tl-profile):\n");
  double worstCheck = 0;
  for (const auto& c : p["checks"]) {
    const double error = c["predicted"].get<double>() / c["measured"].get<double>() - 1;
    worstCheck = std::max(worstCheck, std::abs(error));
    std::printf("  %d workers, %.2f MiB: predicted %.1f, measured %.1f, %+.1f%%%s\n",
                c["workers"].get<int>(), c["cache_mb"].get<double>(), c["predicted"].get<double>(),
                c["measured"].get<double>(), 100 * error,
                c["measured_warm"].get<bool>() ? "" : " (cold)");
  }
  const Cell* best = &cells.front();
  const Cell* chosen = nullptr;
  for (const Cell& c : cells) {
    if (c.measured > best->measured) best = &c;
    if (c.workers == p.value("recommended_workers", -1) &&
        std::abs(c.mb - p.value("recommended_cache_mb", -1.0)) < 1e-3)
      chosen = &c;
  }
  std::printf("\n%-44s %s\n", "worst check error (want within 10%)",
              (std::to_string(int(std::lround(100 * worstCheck))) + "%").c_str());
  std::printf("%-44s %.0f%%\n", "worst error over the whole grid", 100 * worstCell);
  std::printf("%-44s %.0f%% (bursts of %d steps, within the first epoch)\n",
              "the same, profiled cold", 100 * worstCold, kColdSteps);
  std::printf("%-44s %d workers, %.2f MiB: %.1f images/s\n", "best measured grid cell",
              best->workers, best->mb, best->measured);
  if (chosen) {
    std::printf("%-44s %d workers, %.2f MiB: %.1f images/s = %.3f of the best (want >= 0.95)\n",
                "recommended by the profile, measured", chosen->workers, chosen->mb,
                chosen->measured, chosen->measured / best->measured);
  } else {
    std::printf("%-44s none on the grid\n", "recommended by the profile");
  }
  std::printf("%-44s %d runs, %.0f s\n", "profile (sweep + checks)", profileRuns, profileSeconds);
  std::printf("%-44s %zu runs, %.0f s (%.2fx the profile's time)\n", "full grid", cells.size(),
              gridSeconds, gridSeconds / profileSeconds);
  return 0;
}
