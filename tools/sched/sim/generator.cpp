#include "tools/sched/sim/generator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "common/check.h"
#include "tools/sched/sim/profiles.h"

namespace tl::sched {
namespace {

// The load window spans at least this many mean holding times on the slowest kind
// (loadWindowSeconds, generator.h: why, and why three).
constexpr double kLoadWindowHolds = 3;

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


// Reference-kind GPU-seconds that `jobs` offer inside [0, window) when each starts on arrival at
// its request: request x min(duration, window - arrival). Work past the window is not counted:
// a heavy-tailed job that outlives the window does not make the window busy.
double windowGpuSeconds(const std::vector<JobSpec>& jobs, double window,
                        const GeneratorOptions& o, const ProfileSet& profiles) {
  double sum = 0;
  for (const auto& j : jobs) {
    if (j.arrival >= window) continue;
    const double duration = j.work / profiles.rate(j.model, o.referenceKind, j.requestGpus);
    sum += j.requestGpus * std::min(duration, window - j.arrival);
  }
  return sum;
}

// tl-sim --load L: the window is loadWindowSeconds; durations keep the preset's scale (the
// sample's GPU-time equals the capacity over its arrivals, as targetLoad does at load 1) and are
// capped; the arrival times are compressed by the factor r that makes the work offered inside
// the window (windowGpuSeconds) exactly L x capacity x window. That work grows continuously and
// monotonically with r (a job entering at the window's end brings nothing yet), so bisection
// finds r; the stream of jobs is drawn long enough for it. Only jobs arriving inside the window
// are kept, so at L > 1 requests exceed the capacity during the window and a non-elastic
// scheduler queues.
std::vector<JobSpec> generateAtLoad(const GeneratorOptions& o, const ProfileSet& profiles) {
  const double window = loadWindowSeconds(o, profiles);
  const double target = o.arrivalLoad * capacity(o, profiles) * window;
  GeneratorOptions stream = o;
  stream.maxDurationSeconds = 0;  // capped below, after the scale
  const double windows = window / o.spanSeconds;  // the preset's spans in the window
  for (int attempt = 0;; ++attempt) {
    TL_REQUIRE(attempt < 12, "generator: load ", o.arrivalLoad,
               " is out of reach: even ", stream.jobs, " arrivals in the window offer less");
    stream.jobs =
        std::max(2, int(std::ceil(o.jobs * windows * std::max(1.0, o.arrivalLoad) * 4)) << attempt);
    stream.spanSeconds = o.spanSeconds * stream.jobs / o.jobs;  // the preset's arrival rate
    auto base = draw(stream, profiles);
    const double scale =
        capacity(o, profiles) * base.back().arrival / gpuSeconds(base, o, profiles);
    // Capped before the window's work is counted: in a window longer than the cap, a job's
    // share of it is its capped duration (in a shorter one the cap changes nothing there).
    for (auto& j : base) {
      j.work *= scale;
      if (o.maxDurationSeconds > 0)
        j.work = std::min(j.work, o.maxDurationSeconds *
                                      profiles.rate(j.model, o.referenceKind, j.requestGpus));
    }
    std::vector<double> gpus, duration;  // per drawn job: request, seconds on the reference kind
    for (const auto& j : base) {
      gpus.push_back(j.requestGpus);
      duration.push_back(j.work / profiles.rate(j.model, o.referenceKind, j.requestGpus));
    }
    const auto offered = [&](double r) {  // windowGpuSeconds of the arrivals compressed by r
      double sum = 0;
      for (size_t i = 0; i < base.size() && base[i].arrival / r < window; ++i)
        sum += gpus[i] * std::min(duration[i], window - base[i].arrival / r);
      return sum;
    };
    const auto at = [&](double r) {
      std::vector<JobSpec> jobs;
      for (const auto& j : base) {
        if (j.arrival / r >= window) break;
        jobs.push_back(j);
        jobs.back().arrival = j.arrival / r;
      }
      return jobs;
    };
    const double rMax = base.back().arrival / window;  // every drawn job inside the window
    if (offered(rMax) < target) continue;
    double lo = 0, hi = rMax;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
      const double mid = 0.5 * (lo + hi);
      (offered(mid) < target ? lo : hi) = mid;
    }
    auto jobs = at(hi);
    TL_REQUIRE(jobs.size() >= 1, "generator: load ", o.arrivalLoad, " gives no job");
    for (size_t i = 0; i < jobs.size(); ++i) {
      char id[32];
      std::snprintf(id, sizeof id, "job-%05zu", i);
      jobs[i].id = id;
    }
    return jobs;
  }
}

}  // namespace

double loadWindowSeconds(const GeneratorOptions& o, const ProfileSet& profiles) {
  // GPU-seconds per job at the preset's load of 1 (capacity x span / jobs), over the mean
  // request: how long a job holds its GPUs on the reference kind; on the slowest kind, that
  // x the speed ratio (the first model's single-GPU rates, as capacity counts them).
  double shareSum = 0, requestSum = 0;
  for (size_t c = 0; c < o.gpuShares.size(); ++c)
    shareSum += o.gpuShares[c], requestSum += o.gpuShares[c] * o.gpuCounts[c];
  const double meanRequest = requestSum / shareSum;
  const std::string& m = o.models[0];
  double slowest = 1;
  for (const auto& k : o.loadKinds)
    slowest = std::max(slowest, profiles.rate(m, o.referenceKind, 1) / profiles.rate(m, k.name, 1));
  const double hold = capacity(o, profiles) * o.spanSeconds / o.jobs / meanRequest * slowest;
  return std::max(o.spanSeconds, kLoadWindowHolds * hold);
}

double offeredWindowLoad(const std::vector<JobSpec>& jobs, double window,
                         const GeneratorOptions& o, const ProfileSet& profiles) {
  return windowGpuSeconds(jobs, window, o, profiles) / (capacity(o, profiles) * window);
}

std::vector<JobSpec> generateTrace(const GeneratorOptions& o, const ProfileSet& profiles) {
  TL_REQUIRE(o.jobs >= 1, "generator: jobs must be >= 1, got ", o.jobs);
  TL_REQUIRE(o.spanSeconds > 0, "generator: span must be > 0");
  TL_REQUIRE(
      o.gpuCounts.size() == o.gpuShares.size() && o.gpuCounts.size() == o.durationFactor.size(),
      "generator: GPU counts, shares and duration factors differ in length");
  TL_REQUIRE(!o.models.empty() && !o.queues.empty() && !o.referenceKind.empty(),
             "generator: needs models, queues and a reference kind");
  if (o.arrivalLoad > 0) return generateAtLoad(o, profiles);
  auto jobs = draw(o, profiles);
  if (o.targetLoad > 0) {
    const double scale =
        o.targetLoad * capacity(o, profiles) * o.spanSeconds / gpuSeconds(jobs, o, profiles);
    for (auto& j : jobs) j.work *= scale;
  }
  return jobs;
}

}  // namespace tl::sched
