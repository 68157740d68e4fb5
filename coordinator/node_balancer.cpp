#include "coordinator/node_balancer.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

#include "common/check.h"

namespace tl::coordinator {

namespace {

// A job without measurements predicts nothing: all its splits look alike to the allocator.
ThroughputModel modelOf(const ThroughputFitter& fitter) {
  if (!fitter.ready()) return ThroughputModel{0, 1, 0};
  return fitter.fit();
}

}  // namespace

NodeBalancer::NodeBalancer(const BalancerOptions& options) : options_(options) {
  if (options_.hardwareCores <= 0) {
    options_.hardwareCores = std::max(1, int(std::thread::hardware_concurrency()));
  }
  TL_REQUIRE(options_.loaderCores >= 0, "loader cores must be at least 0, got ",
             options_.loaderCores);
  TL_REQUIRE(options_.minGain >= 0, "minimum gain must be at least 0, got ", options_.minGain);
  TL_REQUIRE(options_.exploreWindows >= 1, "explore windows must be at least 1");
  TL_REQUIRE(options_.driftShare > 0, "drift share must be positive");
}

int NodeBalancer::budget() const {
  if (options_.loaderCores > 0) return options_.loaderCores;
  int compute = 0;
  for (const auto& [id, job] : jobs_) compute += job.spec.computeThreads;
  return std::max(1, options_.hardwareCores - compute);
}

int NodeBalancer::measuredSizes(const Job& job) const {
  int sizes = 0;
  for (const auto& [workers, windows] : job.windowsBySize) {
    if (windows >= options_.exploreWindows) ++sizes;
  }
  return sizes;
}

bool NodeBalancer::exploring(const Job& job) const {
  return job.spec.minWorkers < job.spec.maxWorkers && measuredSizes(job) < 2;
}

int NodeBalancer::explorationTarget(const std::string& id, Job& job) {
  // Exploring means fewer than two sizes are measured: if the base is one, the other is next.
  auto atBase = job.windowsBySize.find(job.base);
  if (atBase == job.windowsBySize.end() || atBase->second < options_.exploreWindows) {
    return job.base;
  }
  if (job.step == 0) {
    int othersUse = 0;
    for (const auto& [otherId, other] : jobs_) {
      if (otherId != id) othersUse += other.assigned;
    }
    const bool spareCore = budget() - othersUse - job.base > 0;
    const bool canGoUp = job.base < job.spec.maxWorkers;
    job.step = (spareCore && canGoUp) || job.base == job.spec.minWorkers ? 1 : -1;
  }
  return job.base + job.step;
}

void NodeBalancer::updateBases() {
  const int share = budget() / std::max<int>(1, int(jobs_.size()));
  for (auto& [id, job] : jobs_) {
    int base = std::clamp(share, job.spec.minWorkers, job.spec.maxWorkers);
    if (base != job.base) job.step = 0;
    job.base = base;
  }
}

Decision NodeBalancer::addJob(const std::string& id, const JobSpec& spec) {
  TL_REQUIRE(!jobs_.count(id), "job '", id, "' is already registered");
  TL_REQUIRE(spec.minWorkers >= 1 && spec.maxWorkers >= spec.minWorkers, "job '", id,
             "': need 1 <= min workers <= max workers, got ", spec.minWorkers, " and ",
             spec.maxWorkers);
  TL_REQUIRE(spec.computeThreads >= 0, "job '", id, "': compute threads must be >= 0");
  TL_REQUIRE(spec.cacheBytes < 0 || spec.samples >= 1, "job '", id,
             "': a cache must cover at least one sample");
  Job job{spec, spec.workers, spec.minWorkers, 0, ThroughputFitter(options_.forgetting), {}, {}};
  job.cacheAssigned = spec.cacheBytes;
  jobs_.emplace(id, std::move(job));
  updateBases();
  Decision decision = rebalance(true, "job " + id + " joined");
  decision.changes.emplace(id, jobs_.at(id).assigned);  // it always hears its size
  return decision;
}

Decision NodeBalancer::removeJob(const std::string& id) {
  if (!jobs_.erase(id)) return {};
  updateBases();
  return rebalance(true, "job " + id + " left");
}

Decision NodeBalancer::report(const std::string& id, const ReportMessage& report) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return {};
  Job& job = it->second;
  const bool wasExploring = exploring(job);
  if (report.loader.images > 0) ++job.windowsBySize[report.loader.workers];
  ReportMessage window = report;
  if (job.spec.cacheBytes >= 0 && report.cache.budgetBytes >= 0) {
    // The worker model describes a fully cached job; the misses' reads come back through
    // cacheProfile() for whatever budget is considered.
    const CacheObservation& c = report.cache;
    job.cacheSamples += double(c.hits + c.misses);
    job.cacheBytesServed += double(c.hitBytes + c.storageBytes);
    job.storageBytes += double(c.storageBytes);
    job.storageSeconds += c.storageSeconds;
    const double busy = report.loader.busySeconds;
    window.loader.busySeconds = std::max(busy - c.storageSeconds, 0.05 * busy);
  }
  const double shift = absorb(job, window, wasExploring);
  if (wasExploring && !exploring(job)) return rebalance(true, "job " + id + " finished exploring");
  if (shift != 0) {
    std::ostringstream why;
    why.precision(3);
    why << "job " << id << ": per-image time moved by " << shift * 1000 << " ms; level refitted";
    return rebalance(false, why.str());
  }
  return rebalance(false, "report from " + id);
}

double NodeBalancer::absorb(Job& job, const ReportMessage& report, bool exploringJob) {
  auto add = [&](const ReportMessage& window) {
    job.fitter.addLoader(window.loader);
    job.fitter.addCompute(window.compute);
  };
  if (exploringJob || !job.fitter.ready() || report.loader.images <= 0) {
    add(report);
    return 0;
  }
  const ThroughputModel model = job.fitter.fit();
  auto offset = [&](const ReportMessage& window) {
    return window.loader.busySeconds / double(window.loader.images) -
           (model.a * window.loader.workers + model.b);
  };
  const double predicted = model.a * report.loader.workers + model.b;
  if (std::abs(offset(report)) <= options_.driftShare * predicted) {
    for (const ReportMessage& held : job.offModel) add(held);  // it was a blip
    job.offModel.clear();
    add(report);
    return 0;
  }
  job.offModel.push_back(report);
  if (int(job.offModel.size()) < options_.exploreWindows) return 0;
  // A sustained move: keep the slope, move every remembered window by the image-weighted mean
  // offset, so the windows at other sizes agree with the new level instead of bending the line.
  double weighted = 0, images = 0;
  for (const ReportMessage& held : job.offModel) {
    weighted += offset(held) * double(held.loader.images);
    images += double(held.loader.images);
  }
  const double shift = weighted / images;
  job.fitter.shiftSecondsPerImage(shift);
  for (const ReportMessage& held : job.offModel) add(held);
  job.offModel.clear();
  return shift;
}

Decision NodeBalancer::rebalance(bool force, const std::string& why) {
  Decision decision;
  std::vector<std::string> fittedIds;
  std::vector<JobDemand> demands;
  std::vector<int> current;
  int explorersTotal = 0;
  bool explorerMoved = false;
  for (auto& [id, job] : jobs_) {
    if (exploring(job)) {
      int target = explorationTarget(id, job);
      explorersTotal += target;
      if (target != job.assigned) {
        decision.changes[id] = target;
        job.assigned = target;
        explorerMoved = true;
      }
    } else {
      fittedIds.push_back(id);
      demands.push_back({modelOf(job.fitter), job.spec.minWorkers, job.spec.maxWorkers});
      current.push_back(job.assigned);
    }
  }
  if (jointSplit()) {
    return rebalanceJoint(std::move(decision), force || explorerMoved,
                          std::max(0, budget() - explorersTotal), why);
  }
  const std::vector<int> proposal = allocateGreedy(demands, std::max(0, budget() - explorersTotal));

  bool apply = force || explorerMoved;
  long currentSum = 0, proposalSum = 0;
  for (size_t j = 0; j < demands.size(); ++j) {
    currentSum += current[j];
    proposalSum += proposal[j];
    if (current[j] < demands[j].minWorkers || current[j] > demands[j].maxWorkers) apply = true;
  }
  std::string gainText;
  if (currentSum != proposalSum) apply = true;
  if (!apply) {
    double before = predictedTotal(demands, current);
    double after = predictedTotal(demands, proposal);
    apply = std::isfinite(after) && after > before * (1 + options_.minGain);
    std::ostringstream os;
    os.precision(4);
    os << " (predicted " << before << " -> " << after << " images/s)";
    gainText = os.str();
  }
  if (apply) {
    for (size_t j = 0; j < fittedIds.size(); ++j) {
      Job& job = jobs_.at(fittedIds[j]);
      if (proposal[j] != job.assigned) {
        decision.changes[fittedIds[j]] = proposal[j];
        job.assigned = proposal[j];
      }
    }
  }
  if (!decision.changes.empty() || force) decision.reason = why + gainText + ": " + describe();
  return decision;
}

std::vector<JobView> NodeBalancer::jobs() const {
  std::vector<JobView> out;
  for (const auto& [id, job] : jobs_) {
    out.push_back({id, job.assigned, exploring(job), job.fitter.ready(), modelOf(job.fitter),
                   job.cacheAssigned, cacheProfile(job)});
  }
  return out;
}

std::string NodeBalancer::describe() const {
  std::ostringstream os;
  os.precision(4);
  os << "budget " << budget() << " cores";
  if (cacheBudget() > 0) os << ", " << double(cacheBudget()) / 1048576.0 << " MiB cache";
  double total = 0;
  for (const JobView& job : jobs()) {
    os << "; " << job.id << " " << job.workers << (job.exploring ? " exploring" : "");
    if (!job.measured) {
      os << " [not measured yet]";
      continue;
    }
    const double rate = job.cache.predict(job.model, job.workers, double(job.cacheBytes));
    os << " [a=" << job.model.a << " b=" << job.model.b << " C=" << job.model.computeRate;
    if (job.cacheBytes >= 0) os << " cache " << double(job.cacheBytes) / 1048576.0 << " MiB";
    if (job.cache.known()) {
      os << " (" << job.cache.storageSecondsPerByte * 1e9 << " ns/B, data "
         << job.cache.datasetBytes / 1048576.0 << " MiB)";
    }
    os << " -> " << rate << "/s]";
    total += rate;
  }
  os << "; predicted total " << total << " images/s";
  return os.str();
}

}  // namespace tl::coordinator
