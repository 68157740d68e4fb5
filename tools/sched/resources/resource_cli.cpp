#include "tools/sched/resources/resource_cli.h"

#include <cstdio>

#include "common/check.h"
#include "common/files.h"
#include "common/cli/cli.h"

namespace tl::sched {

std::string resourceTable(const std::vector<ResourceSimResult>& results,
                          const ResourceSimResult& reference) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-17s %11s %11s %11s %11s %11s %10s %10s\n", "policy",
                "mean JCT h", "makespan h", "cpu-hungry", "mem-hungry", "insensitive",
                "JCT ratio", "mksp ratio");
  out += line;
  for (const ResourceSimResult& r : results) {
    std::snprintf(line, sizeof line, "%-17s %11.2f %11.2f %11.2f %11.2f %11.2f %9.2fx %9.2fx\n",
                  r.policy.c_str(), r.meanJct / 3600, r.makespan / 3600,
                  r.meanJctByKind[0] / 3600, r.meanJctByKind[1] / 3600,
                  r.meanJctByKind[2] / 3600, reference.meanJct / r.meanJct,
                  reference.makespan / r.makespan);
    out += line;
  }
  return out;
}

int runResourceSim(int argc, char** argv) {
  ResourceMixOptions mix;
  ResourceServer server;
  int servers = 4;
  int64_t seed = 1;
  double memoryGb = server.memoryBytes / 1e9, spanHours = mix.spanSeconds / 3600;
  std::string shares = "1,1,1", out;
  auto app = cli::makeApp(
      "tl-sim resources",
      "Schedules GPUs, CPU cores and cache memory together on a generated mix of CPU-hungry,\n"
      "memory-hungry and insensitive jobs, under gpu-proportional (cores and memory in\n"
      "proportion to GPUs, best-fit placement) and resource-aware (cores and memory split by\n"
      "the jobs' predicted sensitivity, placement where the server gains most), and prints\n"
      "mean JCT and makespan with the ratio gpu-proportional / policy.");
  cli::addInt(*app, "--jobs", &mix.jobs, "jobs in the mix", 1, 100000);
  cli::addInt(*app, "--servers", &servers, "servers", 1, 4096);
  cli::addInt(*app, "--gpus", &server.gpus, "GPUs a server", 1, 64);
  cli::addInt(*app, "--cpus", &server.cpus, "CPU cores a server (for loaders)", 1, 4096);
  cli::addDouble(*app, "--memory-gb", &memoryGb, "cache memory a server (GB)", 0, 1e6);
  cli::addDouble(*app, "--span-hours", &spanHours, "arrivals spread over this span", 0.001, 1e4);
  cli::addDouble(*app, "--mean-hours", &mix.meanHours, "mean job duration at its best rate",
                 0.001, 1e4);
  app->add_option("--mix", shares, "shares of cpu-hungry,memory-hungry,insensitive jobs")
      ->capture_default_str();
  cli::addInt(*app, "--seed", &seed, "generator seed", 0);
  app->add_option("--out", out, "also write DIR/resources.csv (one row per policy)");
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!cli::parse(*app, args)) return cli::kExitOk;
  TL_REQUIRE(server.cpus >= server.gpus, "--cpus (", server.cpus, ") must be at least --gpus (",
             server.gpus, "): every GPU needs a loader core");
  mix.kindShares.clear();
  {
    size_t start = 0;
    for (;;) {
      const size_t comma = shares.find(',', start);
      const std::string item = shares.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      size_t used = 0;
      double v = -1;
      try {
        v = std::stod(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      TL_REQUIRE(used == item.size() && v >= 0, "--mix: expected three shares >= 0 like 1,1,1, got '",
                 shares, "'");
      mix.kindShares.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  TL_REQUIRE(mix.kindShares.size() == 3 &&
                 mix.kindShares[0] + mix.kindShares[1] + mix.kindShares[2] > 0,
             "--mix: expected three shares (cpu-hungry,memory-hungry,insensitive) with a positive sum, got '",
             shares, "'");
  mix.seed = uint64_t(seed);
  mix.spanSeconds = spanHours * 3600;
  server.memoryBytes = memoryGb * 1e9;
  const std::vector<ResourceJob> jobs = generateResourceMix(mix);
  ResourceSimOptions options;
  options.servers.assign(size_t(servers), server);
  std::vector<ResourceSimResult> results;
  for (const std::string& policy : resourcePolicyNames()) {
    options.policy = policy;
    results.push_back(simulateResources(jobs, options));
  }
  std::printf("%d jobs on %d servers (%d GPUs, %d cores, %.0f GB each)\n%s", mix.jobs, servers,
              server.gpus, server.cpus, memoryGb, resourceTable(results, results[0]).c_str());
  if (!out.empty()) {
    ensureWritableDir(out);
    std::string csv = "policy,mean_jct_s,makespan_s,cpu_hungry_jct_s,memory_hungry_jct_s,insensitive_jct_s\n";
    for (const ResourceSimResult& r : results) {
      char line[256];
      std::snprintf(line, sizeof line, "%s,%.1f,%.1f,%.1f,%.1f,%.1f\n", r.policy.c_str(), r.meanJct,
                    r.makespan, r.meanJctByKind[0], r.meanJctByKind[1], r.meanJctByKind[2]);
      csv += line;
    }
    writeFileAtomic(joinPath(out, "resources.csv"), csv);
  }
  return cli::kExitOk;
}

}  // namespace tl::sched
