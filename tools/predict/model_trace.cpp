#include "tools/predict/model_trace.h"

#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>  // at::set_num_threads (ATen.h no longer brings it in libtorch 2.x)
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/nn/functional/loss.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <unordered_map>
#include <nlohmann/json.hpp>
#include <vector>

namespace tl::predict {
namespace {

// Counts the live bytes of CPU tensors allocated while it is installed; the peak is what one
// training pass needs beyond the model. The data pointer is its own context (some kernels ask
// for raw allocations), so sizes are kept in a table.
class CountingCpuAllocator final : public c10::Allocator {
 public:
// libtorch 2.3 made Allocator::allocate non-const and added the pure virtual copy_data (built
// against 1.13 and 2.6).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define TL_ALLOCATOR_2_3 1
  c10::DataPtr allocate(size_t n) override {
#else
  c10::DataPtr allocate(size_t n) const override {
#endif
    void* data = c10::alloc_cpu(n);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sizes_[data] = n;
      live_ += int64_t(n);
      peak_ = std::max(peak_, live_);
    }
    return {data, data, &release, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
#ifdef TL_ALLOCATOR_2_3
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif

  void resetPeak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    peak_ = live_;
  }
  int64_t live() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_;
  }
  int64_t peak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

 private:
  static void release(void* data);

  mutable std::mutex mutex_;
  mutable std::unordered_map<void*, size_t> sizes_;
  mutable int64_t live_ = 0;
  mutable int64_t peak_ = 0;
};

CountingCpuAllocator* gCounting = nullptr;

void CountingCpuAllocator::release(void* data) {
  if (!data) return;
  {
    std::lock_guard<std::mutex> lock(gCounting->mutex_);
    auto it = gCounting->sizes_.find(data);
    if (it != gCounting->sizes_.end()) {
      gCounting->live_ -= int64_t(it->second);
      gCounting->sizes_.erase(it);
    }
  }
  c10::free_cpu(data);
}

CountingCpuAllocator& countingAllocator() {
  // Installed once for the process (tl-predict only traces); never freed, as tensors it made may
  // outlive any scope.
  static CountingCpuAllocator* allocator = [] {
    gCounting = new CountingCpuAllocator();
    c10::SetCPUAllocator(gCounting, /*priority=*/100);
    return gCounting;
  }();
  return *allocator;
}

double residentMb() {
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  statm >> size >> resident;
  return double(resident) * double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

int64_t bytesOf(const std::vector<at::Tensor>& tensors) {
  int64_t b = 0;
  for (const auto& t : tensors) b += int64_t(t.numel()) * int64_t(t.element_size());
  return b;
}

}  // namespace

ModelTrace traceModel(const models::ModelConfig& config, int64_t batch, int computeThreads, int timedPasses) {
  ModelTrace t;
  t.processBaseMb = residentMb();
  at::set_num_threads(std::max(1, computeThreads));
  CountingCpuAllocator& counter = countingAllocator();
  at::manual_seed(0);
  auto model = models::createModel(config);
  model->train();
  t.parameters = models::countParameters(*model);
  t.parameterBytes = bytesOf(model->parameters());
  t.bufferBytes = bytesOf(model->buffers());
  for (const auto& item : model->named_modules("", /*include_self=*/false)) {
    if (!item.value()->children().empty()) continue;
    std::string kind = item.value()->name();
    if (const auto open = kind.find('<'); open != std::string::npos) kind.resize(open);
    if (const auto colon = kind.rfind("::"); colon != std::string::npos) kind = kind.substr(colon + 2);
    ++t.layers[kind];
    if (!item.value()->parameters(/*recurse=*/false).empty()) ++t.depth;
  }
  at::Tensor images = at::randn({batch, config.inChannels, config.imageSize, config.imageSize});
  at::Tensor labels = at::randint(config.numClasses, {batch}, at::kLong);
  std::vector<double> seconds;
  for (int pass = 0; pass <= timedPasses; ++pass) {
    model->zero_grad();
    const int64_t before = counter.live();
    counter.resetPeak();
    const auto start = std::chrono::steady_clock::now();
    at::Tensor loss = at::cross_entropy_loss(model->forward(images), labels);
    if (pass == 0) t.graph = layerGraphOf(loss);
    loss.backward();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass == 0) continue;  // allocates the gradients, which later passes reuse
    if (pass == 1) t.activationPeakBytes = std::max<int64_t>(0, counter.peak() - before);
    seconds.push_back(s);
  }
  std::sort(seconds.begin(), seconds.end());
  t.forwardBackwardSeconds = seconds.empty() ? 0 : seconds[seconds.size() / 2];
  return t;
}

nlohmann::json toJson(const ModelTrace& t) {
  return {{"parameters", t.parameters},
          {"parameter_bytes", t.parameterBytes},
          {"buffer_bytes", t.bufferBytes},
          {"activation_peak_bytes", t.activationPeakBytes},
          {"forward_backward_s", t.forwardBackwardSeconds},
          {"process_base_mb", t.processBaseMb},
          {"layers", t.layers},
          {"depth", t.depth},
          {"graph_nodes", t.graph.nodes.size()},
          {"graph_edges", t.graph.edges.size()},
          {"forward_flops", t.graph.totalFlops()}};
}

}  // namespace tl::predict
