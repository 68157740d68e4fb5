#include "runtime/train/step_trace.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/files.h"

namespace tl::train {
namespace {

namespace profiler = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

// libtorch 1.13 times its events in microseconds (startUs), 2.x in nanoseconds (startNs): the
// member that exists is used.
template <class E>
auto startNs(const E& e, int) -> decltype(uint64_t(e.startNs())) {
  return uint64_t(e.startNs());
}
template <class E>
uint64_t startNs(const E& e, long) {
  return uint64_t(e.startUs()) * 1000;
}
template <class E>
auto durationNs(const E& e, int) -> decltype(uint64_t(e.durationNs())) {
  return uint64_t(e.durationNs());
}
template <class E>
uint64_t durationNs(const E& e, long) {
  return uint64_t(e.durationUs()) * 1000;
}

std::set<impl::ActivityType> activities(const c10::Device& device) {
  std::set<impl::ActivityType> a{impl::ActivityType::CPU};
  if (device.is_cuda()) a.insert(impl::ActivityType::CUDA);
  return a;
}

impl::ProfilerConfig config() { return impl::ProfilerConfig(impl::ProfilerState::KINETO); }

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Chrome trace categories as PyTorch's own export names them.
const char* category(const profiler::KinetoEvent& e, const std::string& name) {
  if (e.deviceType() != c10::DeviceType::CPU) {
    if (name.find("Memcpy") != std::string::npos) return "gpu_memcpy";
    if (name.find("Memset") != std::string::npos) return "gpu_memset";
    return "kernel";
  }
  if (startsWith(name, "tl::")) return "user_annotation";
  if (startsWith(name, "cuda") || startsWith(name, "cu")) return "cuda_runtime";
  return "cpu_op";
}

}  // namespace

StepTrace::StepTrace(TraceSteps steps, std::string path, c10::Device device)
    : steps_(steps), path_(std::move(path)), device_(device) {
  TL_CHECK(steps_.enabled() && steps_.first <= steps_.last, "StepTrace: steps ", steps_.first, "-",
           steps_.last);
}

StepTrace::~StepTrace() {
  stepSpan_.reset();
  if (recording_) {
    try {
      profiler::disableProfiler();
    } catch (...) {  // a destructor: the trace is lost, the job is not
    }
  }
}

void StepTrace::beginStep(int64_t step) {
  if (!steps_.contains(step) || done_) return;
  if (!recording_) {
    profiler::prepareProfiler(config(), activities(device_));
    profiler::enableProfiler(config(), activities(device_));
    recording_ = true;
  }
  stepSpan_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (stepSpan_->isActive()) stepSpan_->before(std::string("tl::step ") + std::to_string(step));
  ++counts_.steps;
}

void StepTrace::endStep(int64_t step) {
  if (!recording_ || !steps_.contains(step)) return;
  stepSpan_.reset();  // ends the step's span
  if (step == steps_.last) stopAndWrite();
}

void StepTrace::finish() {
  if (recording_) stopAndWrite();
}

void StepTrace::abandon() {
  stepSpan_.reset();
  done_ = true;
  if (!recording_) return;
  recording_ = false;
  profiler::disableProfiler();
}

void StepTrace::stopAndWrite() {
  stepSpan_.reset();
  if (!device_.is_cpu()) {
    // The device's work of the last step ends inside the trace, not after it.
    const c10::impl::VirtualGuardImpl impl(device_.type());
    impl.synchronizeStream(impl.getStream(device_));
  }
  std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  recording_ = false;
  done_ = true;
  const auto& events = result->events();
  uint64_t origin = UINT64_MAX;
  for (const auto& e : events) origin = std::min(origin, startNs(e, 0));
  nlohmann::json trace = nlohmann::json::array();
  for (const auto& e : events) {
    const std::string name = e.name();
    const char* cat = category(e, name);
    const bool onDevice = e.deviceType() != c10::DeviceType::CPU;
    if (onDevice) {
      ++counts_.deviceEvents;
      counts_.deviceRecorded = true;
    } else if (startsWith(name, "aten::")) {
      ++counts_.hostOps;
    }
    const double ts = double(startNs(e, 0) - origin) / 1000.0;
    const double dur = double(durationNs(e, 0)) / 1000.0;
    trace.push_back(
        {{"name", name},
         {"cat", cat},
         {"ph", "X"},
         {"ts", ts},
         {"dur", dur},
         {"pid", onDevice ? "device " + std::to_string(int(e.deviceIndex())) : std::string("host")},
         {"tid", onDevice ? int64_t(e.deviceResourceId()) : int64_t(e.startThreadId())},
         {"args", {{"correlation", e.correlationId()}}}});
  }
  nlohmann::json doc = {{"traceEvents", std::move(trace)},
                        {"displayTimeUnit", "ms"},
                        {"tl",
                         {{"steps", {steps_.first, steps_.last}},
                          {"steps_recorded", counts_.steps},
                          {"device", device_.str()},
                          {"device_events_recorded", counts_.deviceRecorded}}}};
  const std::filesystem::path folder = std::filesystem::path(path_).parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder);
  writeFileAtomic(path_, doc.dump());
  written_ = true;
}

}  // namespace tl::train
