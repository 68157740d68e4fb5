// End-to-end: two real tl-launch jobs with --workers auto and --cache-mb 0.15 on one node share a
// coordinator that splits their 0.3 MiB of cache: one is compute-bound on small files, the other
// loader-bound on large ones. The memory goes to the second, and each job's metrics.jsonl shows
// the budget it runs with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "coordinator/ensure_coordinator.h"
#include "tests/support/run_command.h"
#include "tests/coordinator/coordinator_test_util.h"

namespace {

using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

// The cache gauges of every epoch record of `outDir`/metrics.jsonl.
std::vector<nlohmann::json> cacheRecords(const std::string& outDir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(outDir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("type", "") == "epoch" && j.contains("cache")) out.push_back(j["cache"]);
  }
  return out;
}

std::string jpegFolder(const std::string& name, int minSize, int maxSize) {
  const std::string dir = freshDir(name);
  auto r = runCommand(std::string(TL_DATA_BIN) + " jpeg-synth --out " + dir +
                          " --classes 2 --train 64 --val 8 --min-size " + std::to_string(minSize) +
                          " --max-size " + std::to_string(maxSize) + " --seed 4",
                      120, freshDir(name + "_gen"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return dir;
}

TEST(CacheSplitE2E, TheCoordinatorMovesCacheMemoryBetweenRealJobs) {
  const std::string small = jpegFolder("cache_split_small", 24, 40);
  const std::string large = jpegFolder("cache_split_large", 160, 240);
  const std::string runDir = tl::coordinator::test_util::freshRunDir("cache_split");
  tl::coordinator::test_util::CoordinatorCleanup cleanup{runDir};
  // Any predicted gain moves memory (--min-gain 0).
  tl::coordinator::EnsureCoordinatorOptions options;
  options.extraArgs = {"--loader-cores", "2", "--min-gain", "0", "--idle-exit-seconds", "20"};
  ASSERT_TRUE(tl::coordinator::ensureCoordinator(runDir, TL_COORDINATOR_BIN, options));

  const std::string outSmall = freshDir("cache_split_out_small");
  const std::string outLarge = freshDir("cache_split_out_large");
  const double startMb = 0.15;
  auto job = [&](const std::string& data, const std::string& out, const std::string& run) {
    return std::string(TL_MPIEXEC) + " --oversubscribe -np 1 " + TL_LAUNCH_BIN +
           " --dataset imagefolder --data-dir " + data + " --image-size 32 --model cnn --batch 32 " +
           run + " --workers auto --log-every 0 --cache-mb 0.15 --coordinator-dir " + runDir +
           " --output-dir " + out;
  };
  // Small files on a slow stand-in device (3000 images/s, ~10 s): compute-bound, insensitive to
  // memory. Large files on a fast one: loader-bound, and a miss costs a worker several times its
  // decode, so cache memory is worth most there. The large job's length is set by the loader,
  // that is by the machine: 600 steps lasted 3.5 s on a fast one, before the coordinator had
  // measured both jobs (about 4 s after they joined), and nothing moved. 2400 steps keep it
  // running past the small job's end there (~14 s) and are ~40 s where the loader is 3x slower.
  const std::string script = job(small, outSmall, "--steps 900 --device sim:3000") + " & a=$!; " +
                             job(large, outLarge, "--steps 2400 --device sim:20000") +
                             " & b=$!; wait $a; ra=$?; wait $b; rb=$?; exit $((ra | rb))";
  auto r = runCommand("sh -c '" + script + "'", 240, outSmall);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;

  const auto smallRecords = cacheRecords(outSmall), largeRecords = cacheRecords(outLarge);
  ASSERT_FALSE(smallRecords.empty());
  ASSERT_FALSE(largeRecords.empty());
  const int64_t start = int64_t(startMb * 1048576);
  EXPECT_EQ(smallRecords.front()["budget_bytes"].get<int64_t>(), start);
  // While both run the pool is their two budgets; once the small job leaves it is the large
  // job's own again, so look at the extremes rather than the last records.
  int64_t largeMost = 0, smallLeast = INT64_MAX;
  for (const auto& c : largeRecords) largeMost = std::max(largeMost, c["budget_bytes"].get<int64_t>());
  for (const auto& c : smallRecords) smallLeast = std::min(smallLeast, c["budget_bytes"].get<int64_t>());
  const std::string log = slurp(runDir + "/coordinator.log");
  EXPECT_GT(largeMost, start) << "the memory-sensitive job got more than its own budget\n" << log;
  EXPECT_LT(smallLeast, start) << "the insensitive job gave memory up\n" << log;
  EXPECT_LE(largeMost, 2 * start) << "never more than the jobs' own budgets together";
  for (const auto& c : smallRecords) EXPECT_LE(c["used_bytes"].get<int64_t>(), c["budget_bytes"].get<int64_t>());
  for (const auto& c : largeRecords) EXPECT_LE(c["used_bytes"].get<int64_t>(), c["budget_bytes"].get<int64_t>());
  EXPECT_NE(log.find("MiB cache"), std::string::npos) << log;
  EXPECT_NE(r.out.find("dataset cache resized by the node coordinator"), std::string::npos)
      << r.out;
}

}  // namespace
