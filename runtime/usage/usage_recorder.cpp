#include "runtime/usage/usage_recorder.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "runtime/usage/nvml.h"

namespace tl::usage {
namespace {

double processCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double residentMb() {
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return double(resident) * double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

}  // namespace

nlohmann::json readInterfaceBytes(const std::string& path) {
  nlohmann::json out = nlohmann::json::object();
  std::ifstream in(path);
  std::string line;
  for (int header = 0; header < 2 && std::getline(in, line); ++header) {
  }
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    std::istringstream fields(line.substr(colon + 1));
    long long v[9] = {};
    for (auto& x : v) fields >> x;
    if (!fields) continue;
    out[name] = {{"rx_bytes", v[0]}, {"tx_bytes", v[8]}};
  }
  return out;
}

UsageRecorder::UsageRecorder(UsageOptions options) : options_(std::move(options)) {
  options_.computeThreads = std::max(1, options_.computeThreads);
  options_.windowSteps = std::max<int64_t>(1, options_.windowSteps);
  if (options_.gpu) nvml_ = Nvml::open(options_.deviceIndex, &nvmlNote_);
  memoryFloorMb_ = sampleNow().memoryMb;
}

UsageRecorder::~UsageRecorder() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  if (sampler_.joinable()) sampler_.join();
}

UsageRecorder::Sample UsageRecorder::sampleNow() const {
  Sample s;
  s.t = now();
  s.processCpu = processCpuSeconds();
  s.callCpu = traffic_.callCpuSeconds();
  s.memoryMb = residentMb();
  if (nvml_) {
    if (auto g = nvml_->read()) {
      s.computeValue = g->utilisation;
      s.memoryMb = double(g->usedBytes) / (1024.0 * 1024.0);
    }
  }
  return s;
}

void UsageRecorder::start() {
  if (started_) return;
  started_ = true;
  last_ = sampleNow();
  sampler_ = std::thread([this] { samplerLoop(); });
}

void UsageRecorder::samplerLoop() {
  const auto period = std::chrono::duration<double>(options_.samplePeriodSeconds);
  for (;;) {
    std::this_thread::sleep_for(period);
    Sample s = sampleNow();
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;
    pending_.push_back(s);
  }
}

void UsageRecorder::drain(double until) {
  std::vector<Sample> samples;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    samples.swap(pending_);
  }
  std::vector<Trackers*> into;
  if (run_) into.push_back(run_.get());
  if (window_) into.push_back(window_.get());
  for (const Sample& s : samples) {
    if (last_ && s.t > last_->t) {
      const double dt = s.t - last_->t;
      double compute = s.computeValue;
      if (compute < 0) {
        const double busy = (s.processCpu - last_->processCpu) - (s.callCpu - last_->callCpu);
        compute = std::max(0.0, busy) / (dt * double(options_.computeThreads));
      }
      for (Trackers* t : into) {
        t->compute.add(last_->t, s.t, compute);
        t->memory.add(last_->t, s.t, s.memoryMb);
      }
    }
    last_ = s;
  }
  std::vector<TrafficEvent> events = traffic_.take();
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  for (const TrafficEvent& e : events) {
    const double seconds = e.end - e.start;
    const double txRate = seconds > 0 ? double(e.sent) / seconds / 1e6 : 0;
    const double rxRate = seconds > 0 ? double(e.received) / seconds / 1e6 : 0;
    for (Trackers* t : into) {
      t->tx.add(e.start, e.end, txRate);
      t->rx.add(e.start, e.end, rxRate);
      t->sent += e.sent;
      t->received += e.received;
    }
  }
  for (Trackers* t : into) {
    t->tx.add(until, until, 0);
    t->rx.add(until, until, 0);
  }
}

std::optional<nlohmann::json> UsageRecorder::markStep(int64_t stepsDone) {
  if (!started_) return std::nullopt;
  const double t = now();
  drain(t);
  auto fresh = [&] {
    auto tr = std::make_unique<Trackers>(memoryFloorMb_ + kMemoryBurstMarginMb);
    for (BurstTracker* b : {&tr->compute, &tr->memory, &tr->tx, &tr->rx}) b->add(t, t, 0);
    tr->firstStep = tr->lastStep = stepsDone;
    return tr;
  };
  if (!run_) {
    run_ = fresh();
    window_ = fresh();
    interfacesAtStart_ = readInterfaceBytes();
    return std::nullopt;
  }
  run_->lastStep = window_->lastStep = stepsDone;
  steady_ = std::make_unique<Trackers>(*run_);
  if (stepsDone - window_->firstStep < options_.windowSteps) return std::nullopt;
  nlohmann::json record = figuresJson(*window_);
  record["type"] = "usage";
  window_ = fresh();
  return record;
}

nlohmann::json UsageRecorder::figuresJson(const Trackers& t) {
  nlohmann::json j;
  const TwelveMetrics m = twelveOf(t);
  for (size_t i = 0; i < m.size(); ++i) j[kMetricNames[i]] = m[i];
  const int64_t steps = t.lastStep - t.firstStep;
  j["first_step"] = t.firstStep;
  j["last_step"] = t.lastStep;
  j["tx_bytes"] = t.sent;
  j["rx_bytes"] = t.received;
  j["tx_bytes_per_step"] = steps > 0 ? double(t.sent) / double(steps) : 0.0;
  j["rx_bytes_per_step"] = steps > 0 ? double(t.received) / double(steps) : 0.0;
  j["compute_bursts"] = t.compute.figures().bursts;
  j["tx_bursts"] = t.tx.figures().bursts;
  j["rx_bursts"] = t.rx.figures().bursts;
  j["span_s"] = t.tx.figures().spanSeconds;
  return j;
}

TwelveMetrics UsageRecorder::twelveOf(const Trackers& t) {
  TwelveMetrics m{};
  size_t i = 0;
  for (const BurstTracker* b : {&t.compute, &t.memory, &t.tx, &t.rx}) {
    const BurstFigures f = b->figures();
    m[i++] = f.idleSeconds;
    m[i++] = f.burstSeconds;
    m[i++] = f.burstConsumption;
  }
  return m;
}

TwelveMetrics UsageRecorder::twelve() const { return steady_ ? twelveOf(*steady_) : TwelveMetrics{}; }

nlohmann::json UsageRecorder::steadyFigures() const {
  if (steady_) return figuresJson(*steady_);
  Trackers none(0);
  if (run_) none.firstStep = none.lastStep = run_->firstStep;
  return figuresJson(none);
}

nlohmann::json UsageRecorder::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  if (sampler_.joinable()) sampler_.join();
  nlohmann::json j;
  if (steady_) {
    j = figuresJson(*steady_);
  } else {
    j["first_step"] = j["last_step"] = 0;
    j["note"] = "fewer than two step boundaries: nothing measured";
  }
  j["compute_source"] = nvml_ ? "nvml" : "cpu";
  j["memory_source"] = nvml_ ? "nvml" : "rss";
  if (options_.gpu && !nvml_) j["nvml"] = nvmlNote_;
  j["compute_threads"] = options_.computeThreads;
  j["sample_period_s"] = options_.samplePeriodSeconds;
  j["thresholds"] = {{"compute_busy_above", kComputeBusyThreshold},
                     {"memory_burst_above_mb", memoryFloorMb_ + kMemoryBurstMarginMb},
                     {"traffic_join_gap_s", kTrafficJoinGapSeconds}};
  nlohmann::json interfaces = nlohmann::json::object();
  const nlohmann::json end = readInterfaceBytes();
  for (auto it = end.begin(); it != end.end(); ++it) {
    if (!interfacesAtStart_.contains(it.key())) continue;
    const auto& a = interfacesAtStart_[it.key()];
    interfaces[it.key()] = {{"rx_bytes", it.value()["rx_bytes"].get<int64_t>() - a["rx_bytes"].get<int64_t>()},
                            {"tx_bytes", it.value()["tx_bytes"].get<int64_t>() - a["tx_bytes"].get<int64_t>()}};
  }
  j["interfaces"] = interfaces;
  return j;
}

}  // namespace tl::usage
