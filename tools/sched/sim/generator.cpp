#include "tools/sched/sim/generator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "common/check.h"
#include "tools/sched/sim/profiles.h"

namespace tl::sched {
namespace {

// Distributions written out (not <random>'s), so a seed gives the same trace with any
// standard library.
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  double uniform() { return (double(engine_() >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)
  double exponential(double rate) { return -std::log(uniform()) / rate; }
  double normal() {  // Box-Muller
    return std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform());
  }

 private:
  std::mt19937_64 engine_;
};

// Arrival times with mean rate `rate` and inter-arrival CV `cv`: Poisson for cv <= 1, else an
// interrupted Poisson process (on: arrivals at rate/onShare; off: none), whose inter-arrival
// CV^2 = 1 + 2 lambda alpha / (alpha + beta)^2 (alpha: on->off, beta: off->on).
std::vector<double> arrivals(int n, double rate, double cv, Random& rng) {
  std::vector<double> times;
  double t = 0;
  if (cv <= 1) {
    for (int i = 0; i < n; ++i) times.push_back(t += rng.exponential(rate));
    return times;
  }
  constexpr double onShare = 0.05;
  const double lambda = rate / onShare;
  const double alpha = 2 * rate * (1 - onShare) * (1 - onShare) / ((cv * cv - 1) * onShare);
  const double beta = alpha * onShare / (1 - onShare);
  double onLeft = rng.exponential(alpha);
  while (int(times.size()) < n) {
    const double gap = rng.exponential(lambda);
    if (gap <= onLeft) {
      onLeft -= gap;
      times.push_back(t += gap);
    } else {
      t += onLeft + rng.exponential(beta);
      onLeft = rng.exponential(alpha);
    }
  }
  return times;
}

ClusterSpec cluster(const std::string& kinds) {
  ClusterSpec c;
  c.kinds = parseKinds(kinds, "preset");
  c.queues = parseQueues("a:0.5:1,b:0.5:1", "preset");
  return c;
}

}  // namespace

const std::vector<std::string>& presetNames() {
  static const std::vector<std::string> names{"pollux", "easyscale", "large"};
  return names;
}

Preset preset(const std::string& name) {
  Preset p;
  p.name = name;
  GeneratorOptions& g = p.generator;
  g.queues = {"a", "b"};
  if (name == "pollux") {
    // Pollux (OSDI'21) replays 160 Philly jobs over 8 h on 64 GPUs.
    p.cluster = cluster("fast:64");
    g.jobs = 160;
    g.spanSeconds = 8 * 3600;
  } else if (name == "easyscale") {
    // EasyScale (SC'23): ~70 jobs over 80 min on 32 + 16 + 16 GPUs of three kinds.
    p.cluster = cluster("fast:32,mid:16,slow:16");
    g.jobs = 70;
    g.spanSeconds = 80 * 60;
  } else if (name == "large") {
    // 10,000 jobs with bursty arrivals (CV 15) over 72 h on 1000 GPUs.
    p.cluster = cluster("fast:500,mid:250,slow:250");
    g.jobs = 10000;
    g.spanSeconds = 72 * 3600;
    g.interArrivalCv = 15;
  } else {
    inputError("unknown preset '", name, "' (known: pollux, easyscale, large)");
  }
  // Philly's p99 is ~70 h; a trace of a few hours keeps jobs within twice its span (else one
  // job holds most of the GPU-time and the rest of the trace sees an idle cluster).
  g.maxDurationSeconds = std::min(100 * 3600.0, 2 * g.spanSeconds);
  g.targetLoad = 1;
  g.growFactor = 4;
  g.loadKinds = p.cluster.kinds;
  g.referenceKind = p.cluster.kinds[0].name;
  return p;
}

namespace {

// The jobs as drawn: durations (capped) as work on the reference kind, nothing scaled.
std::vector<JobSpec> draw(const GeneratorOptions& o, const ProfileSet& profiles) {
  Random rng(o.seed);
  const auto times = arrivals(o.jobs, o.jobs / o.spanSeconds, o.interArrivalCv, rng);
  double shareSum = 0;
  for (double s : o.gpuShares) shareSum += s;
  std::vector<JobSpec> jobs;
  for (int i = 0; i < o.jobs; ++i) {
    JobSpec j;
    char id[32];
    std::snprintf(id, sizeof id, "job-%05d", i);
    j.id = id;
    j.arrival = times[size_t(i)];
    double u = rng.uniform() * shareSum;
    size_t c = 0;
    while (c + 1 < o.gpuCounts.size() && u >= o.gpuShares[c]) u -= o.gpuShares[c++];
    j.requestGpus = o.gpuCounts[c];
    j.maxGpus = std::max(j.requestGpus, std::min(o.maxGpusCap, j.requestGpus * o.growFactor));
    j.minGpus = o.elastic ? 1 : j.requestGpus;
    if (!o.elastic) j.maxGpus = j.requestGpus;
    double duration = std::exp(o.lnMu + o.lnSigma * rng.normal()) * o.durationFactor[c] * o.durationScale;
    if (o.maxDurationSeconds > 0) duration = std::min(duration, o.maxDurationSeconds);
    j.model = o.models[size_t(rng.uniform() * double(o.models.size())) % o.models.size()];
    j.queue = o.queues[size_t(rng.uniform() * double(o.queues.size())) % o.queues.size()];
    j.work = duration * profiles.rate(j.model, o.referenceKind, j.requestGpus);
    jobs.push_back(j);
  }
  return jobs;
}

// GPU-seconds of the jobs, requests on the reference kind.
double gpuSeconds(const std::vector<JobSpec>& jobs, const GeneratorOptions& o,
                  const ProfileSet& profiles) {
  double sum = 0;
  for (const auto& j : jobs)
    sum += j.requestGpus * j.work / profiles.rate(j.model, o.referenceKind, j.requestGpus);
  return sum;
}

// `loadKinds` in reference-kind GPUs, by the first model's single-GPU rates.
double capacity(const GeneratorOptions& o, const ProfileSet& profiles) {
  TL_REQUIRE(!o.loadKinds.empty(), "generator: a target load needs the cluster's GPU kinds");
  const std::string& m = o.models[0];
  double c = 0;
  for (const auto& k : o.loadKinds)
    c += k.count * profiles.rate(m, k.name, 1) / profiles.rate(m, o.referenceKind, 1);
  return c;
}

}  // namespace

std::vector<JobSpec> generateTrace(const GeneratorOptions& o, const ProfileSet& profiles) {
  TL_REQUIRE(o.jobs >= 1, "generator: jobs must be >= 1, got ", o.jobs);
  TL_REQUIRE(o.spanSeconds > 0, "generator: span must be > 0");
  TL_REQUIRE(
      o.gpuCounts.size() == o.gpuShares.size() && o.gpuCounts.size() == o.durationFactor.size(),
      "generator: GPU counts, shares and duration factors differ in length");
  TL_REQUIRE(!o.models.empty() && !o.queues.empty() && !o.referenceKind.empty(),
             "generator: needs models, queues and a reference kind");
  if (o.arrivalLoad > 0) {
    // The arrival rate times the load over the same span: that many more jobs, durations drawn
    // alike. As the presets do for a load of 1, the durations are then scaled so the sample's
    // load is exact (a heavy-tailed sample's GPU-time is far from its expectation); the scale
    // does not depend on the load, only on the sample.
    GeneratorOptions more = o;
    more.jobs = std::max(2, int(std::lround(o.jobs * o.arrivalLoad)));
    auto jobs = draw(more, profiles);
    const double window = jobs.back().arrival;
    const double scale =
        o.arrivalLoad * capacity(o, profiles) * window / gpuSeconds(jobs, o, profiles);
    for (auto& j : jobs) j.work *= scale;
    return jobs;
  }
  auto jobs = draw(o, profiles);
  if (o.targetLoad > 0) {
    const double scale =
        o.targetLoad * capacity(o, profiles) * o.spanSeconds / gpuSeconds(jobs, o, profiles);
    for (auto& j : jobs) j.work *= scale;
  }
  return jobs;
}

}  // namespace tl::sched
