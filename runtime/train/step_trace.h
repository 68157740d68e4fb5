// --trace-steps FIRST[-LAST]: a trace of those training steps, as libtorch's profiler records
// them: every ATen op on the host and, where libtorch has Kineto and the job runs on a GPU, every
// kernel, copy and CUDA runtime call on the device, with tl's phases as named spans (the step,
// each EST's forward and backward, the reduction, the optimizer). Written as a Chrome trace
// (chrome://tracing, ui.perfetto.dev) that PyTorch's own profiler export also uses, so the two
// compare side by side (bench/reference/trace_summary.py). Recording changes no bit of the job.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <ATen/record_function.h>
#include <c10/core/Device.h>

namespace tl::train {

// Steps FIRST..LAST, counted from 1 as the log counts them; FIRST = 0: no trace.
struct TraceSteps {
  int64_t first = 0;
  int64_t last = 0;
  bool enabled() const { return first > 0; }
  bool contains(int64_t step) const { return enabled() && step >= first && step <= last; }
};

// What the trace holds, for the log.
struct TraceCounts {
  int64_t steps = 0;
  int64_t hostOps = 0;       // ATen ops (nested ones included)
  int64_t deviceEvents = 0;  // kernels, copies and sets on a device
  bool deviceRecorded = false;
};

// One per process. On the training thread: beginStep/endStep around every step of the run;
// the profiler runs from the first traced step's begin to the last one's end.
class StepTrace {
 public:
  // path: the Chrome trace to write (its folder is made); device: the replica's.
  StepTrace(TraceSteps steps, std::string path, c10::Device device);
  ~StepTrace();
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;

  void beginStep(int64_t step);  // step counted from 1
  void endStep(int64_t step);    // writes the trace after the last traced step
  // The run ends (or pauses for a rescale) inside the range: writes what was recorded.
  void finish();
  // The run failed: the profiler stops, nothing is written, no later step is recorded.
  void abandon();

  bool written() const { return written_; }
  const TraceCounts& counts() const { return counts_; }
  const std::string& path() const { return path_; }

 private:
  void stopAndWrite();

  TraceSteps steps_;
  std::string path_;
  c10::Device device_;
  bool recording_ = false;
  bool done_ = false;  // written or abandoned: nothing more is recorded
  bool written_ = false;
  TraceCounts counts_;
  std::unique_ptr<at::RecordFunction> stepSpan_;
};

// A named span in the trace (a phase of tl's step) while the profiler records; otherwise only
// the check that it does not (as every ATen op makes).
class TraceSpan {
 public:
  explicit TraceSpan(const char* name) : span_(at::RecordScope::USER_SCOPE) {
    if (span_.isActive()) span_.before(std::string(name));
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  at::RecordFunction span_;
};

}  // namespace tl::train
